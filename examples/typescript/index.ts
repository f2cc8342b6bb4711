// gpufleet from TypeScript. Set up once:
//   pulumi package add https://github.com/<org>/gpufleet/components/provider@v0.1.0
// Args are the stack file's `gpufleet:cluster` fields in camelCase, without `cloud` (the component decides it);
// inside the free-form `node` and `rollout` maps, keys stay as the spec reference writes them (snake_case).
import * as pulumi from "@pulumi/pulumi";
import * as aws from "@pulumi/aws";
import * as gpufleet from "@pulumi/gpufleet";

const network = new pulumi.StackReference("platform/network/prod");
const trainingAccount = new aws.Provider("training-account", { region: "us-east-2" });

// Two node groups, each its own Auto Scaling group and Slurm partition: `train` on spot (the default partition) and
// `debug`, one node on demand. The top-level fields are both groups' defaults.
const cluster = new gpufleet.AwsGpuCluster("train", {
    region: "us-east-2",
    zone: "use2-az2",
    accelerator: { gpu: "H100", gpusPerNode: 8 },
    network: { existingSubnetId: network.getOutput("private_subnet_id") },
    tags: { team: "research" },
    node: { exporters: { dcgm: true, node: true } },
    scheduler: { kind: "slurm" },
    nodeGroups: {
        train: { nodes: 2, market: { type: "spot" }, slurmDefault: true },
        debug: { nodes: 1, market: { type: "on-demand" } },
    },
}, { providers: [trainingAccount] });

export const fleetName = cluster.fleetName;
export const nodeGroups = cluster.nodeGroups;
export const slurmShell = cluster.slurmShell;
export const estimatedUsdPerHour = cluster.estimatedUsdPerHour;
