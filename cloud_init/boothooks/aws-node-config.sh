#!/bin/sh
# gpufleet node config bootstrap (AWS). cloud-init runs it as a boothook on every boot, before its modules.
#
# The node's cloud-config is larger than EC2's 16 KB of user data, so the launch template carries this script and
# the config lies in the cluster's S3 bucket, named by its SHA-256. The script fetches it as the node (instance
# profile credentials, a SigV4-signed GetObject by gpufleet-aws), checks the digest, and installs it as
# $GPUFLEET_CLOUD_CFG_DIR/90-gpufleet-node.cfg. cloud-init reads its configuration again once the boothooks have
# run, so the modules of this first boot (write_files, runcmd, power_state) apply it as they would the user data.
#
# On later boots the file is in place with the same digest and nothing is fetched. A config that cannot be fetched
# (no route to S3 yet, the role's credentials not yet issued) is retried GPUFLEET_BOOTSTRAP_ATTEMPTS times,
# GPUFLEET_BOOTSTRAP_PAUSE seconds apart (40 x 15 s). After that the node powers off: the Auto Scaling group
# replaces a stopped instance, instead of billing a GPU node that never configures.
#
# Set by the lines above this file's body: NODE_CONFIG_BUCKET, NODE_CONFIG_KEY, NODE_CONFIG_SHA256, GPUFLEET_AWS
# (the path of gpufleet-aws, written there first).
set -u
cfg_dir=${GPUFLEET_CLOUD_CFG_DIR:-/etc/cloud/cloud.cfg.d}
target=$cfg_dir/90-gpufleet-node.cfg
attempts=${GPUFLEET_BOOTSTRAP_ATTEMPTS:-40}
pause=${GPUFLEET_BOOTSTRAP_PAUSE:-15}

say() {
    echo "gpufleet bootstrap: $*" >&2
    logger -t gpufleet-bootstrap -- "$*" 2>/dev/null || true
}

has_digest() {
    [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d ' ' -f 1)" = "$NODE_CONFIG_SHA256" ]
}

if has_digest "$target"; then
    say "node config $NODE_CONFIG_SHA256 already in place"
    exit 0
fi
umask 077
mkdir -p "$cfg_dir"
attempt=1
while :; do
    if python3 "$GPUFLEET_AWS" get-object "$NODE_CONFIG_BUCKET" "$NODE_CONFIG_KEY" >"$target.part"; then
        if has_digest "$target.part"; then
            mv -f "$target.part" "$target"
            say "node config s3://$NODE_CONFIG_BUCKET/$NODE_CONFIG_KEY installed as $target"
            exit 0
        fi
        say "s3://$NODE_CONFIG_BUCKET/$NODE_CONFIG_KEY does not have digest $NODE_CONFIG_SHA256"
    fi
    rm -f "$target.part"
    if [ "$attempt" -ge "$attempts" ]; then
        say "no node config after $attempts attempts; powering off so the group replaces this node"
        systemctl --no-block poweroff
        exit 1
    fi
    attempt=$((attempt + 1))
    sleep "$pause"
done
