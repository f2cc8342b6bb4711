// gpufleet from TypeScript. Set up once:
//   pulumi package add https://github.com/<org>/gpufleet/components/provider@v0.1.0
// Args are the stack file's `gpufleet:cluster` fields in camelCase, without `cloud` (the component decides it);
// inside the free-form `node` and `rollout` maps, keys stay as the spec reference writes them (snake_case).
import * as pulumi from "@pulumi/pulumi";
import * as aws from "@pulumi/aws";
import * as gpufleet from "@pulumi/gpufleet";

const network = new pulumi.StackReference("platform/network/prod");
const trainingAccount = new aws.Provider("training-account", { region: "us-east-2" });

const cluster = new gpufleet.AwsGpuCluster("train", {
    region: "us-east-2",
    zone: "use2-az2",
    nodes: 2,
    accelerator: { gpu: "H100", gpusPerNode: 8 },
    market: { type: "spot" },
    network: { existingSubnetId: network.getOutput("private_subnet_id") },
    tags: { team: "research" },
    node: { exporters: { dcgm: true, node: true } },
}, { providers: [trainingAccount] });

export const fleetName = cluster.fleetName;
export const connect = cluster.connect;
export const estimatedUsdPerHour = cluster.estimatedUsdPerHour;
