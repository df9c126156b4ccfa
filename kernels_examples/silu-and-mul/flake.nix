{
  description = "silu-and-mul: SwiGLU activation as a noarch (pure PyTorch) kernel built with kernel-builder";

  inputs = {
    kernel-builder.url = "github:huggingface/kernels";
  };

  outputs =
    {
      self,
      kernel-builder,
    }:
    kernel-builder.lib.genKernelFlakeOutputs {
      inherit self;
      path = ./.;
    };
}
