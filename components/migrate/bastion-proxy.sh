#!/bin/sh
# ssh ProxyCommand through Azure Bastion: bastion-proxy.sh BASTION RESOURCE_GROUP VM_RESOURCE_ID PORT
# `az network bastion tunnel` only listens on a local port (it has no stdin mode, unlike IAP's --listen-on-stdin), so
# this starts it on a free loopback port, waits until it accepts, and joins stdin/stdout to it with nc.
set -eu
name=$1
group=$2
target=$3
port=$4
local_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
az network bastion tunnel --name "$name" --resource-group "$group" --target-resource-id "$target" \
  --resource-port "$port" --port "$local_port" >/dev/null 2>&1 &
tunnel=$!
trap 'kill "$tunnel" 2>/dev/null || true' EXIT
tries=0
until nc -z 127.0.0.1 "$local_port" 2>/dev/null; do
  tries=$((tries + 1))
  if [ "$tries" -ge 120 ] || ! kill -0 "$tunnel" 2>/dev/null; then
    echo "az network bastion tunnel did not open port $local_port" >&2
    exit 1
  fi
  sleep 0.5
done
nc 127.0.0.1 "$local_port"
