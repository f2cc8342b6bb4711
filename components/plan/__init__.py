"""The offline plan: runs the Pulumi program under the SDK's mock runtime and reports what it would declare."""
