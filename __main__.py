"""gpufleet: one GPU cluster per stack, described by the stack's `gpufleet:cluster` config."""

from gpufleet.program import declare_stack

declare_stack()
