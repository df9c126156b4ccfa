{
  description = "upskill-hub: kernels_examples built with kernel-builder";

  # Every example is also a flake of its own (kernels_examples/<name>/flake.nix):
  #   cd kernels_examples/rmsnorm && nix run .#build-and-copy -L   # writes ./build/<variant>/
  # From the repository root:
  #   nix build .#rmsnorm -L           # bundle of all rmsnorm variants in ./result
  #   nix build -L                     # ./result/<example>/<variant>/ for every example
  #   nix run .#build-and-copy -L      # every example's variants into kernels_examples/<name>/build/
  #   nix develop .#rmsnorm            # dev shell with the build toolchain

  inputs = {
    kernel-builder.url = "github:huggingface/kernels";
  };

  outputs =
    {
      self,
      kernel-builder,
    }:
    let
      inherit (kernel-builder.inputs) nixpkgs;
      lib = nixpkgs.lib;

      # Example name (folder under kernels_examples/) -> its kernel-builder outputs.
      examples = {
        rmsnorm = ./kernels_examples/rmsnorm;
        silu-and-mul = ./kernels_examples/silu-and-mul;
      };
      exampleOutputs = lib.mapAttrs (
        _: path:
        kernel-builder.lib.genKernelFlakeOutputs {
          inherit self path;
        }
      ) examples;

      systems = builtins.attrNames exampleOutputs.rmsnorm.packages;
      forAllSystems = lib.genAttrs systems;
    in
    {
      packages = forAllSystems (
        system:
        let
          pkgs = nixpkgs.legacyPackages.${system};
          perExample = lib.mapAttrs (_: out: out.packages.${system}.bundle) exampleOutputs;
          copyAll = pkgs.writeShellScriptBin "build-and-copy" (
            ''
              set -euo pipefail
              root="$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
            ''
            + lib.concatStrings (
              lib.mapAttrsToList (name: out: ''
                echo "kernels_examples/${name}: copying variants to build/"
                (cd "$root/kernels_examples/${name}" && ${
                  out.packages.${system}.build-and-copy
                }/bin/build-and-copy)
              '') exampleOutputs
            )
          );
        in
        perExample
        // lib.mapAttrs' (
          name: out: lib.nameValuePair "${name}-build-and-copy" out.packages.${system}.build-and-copy
        ) exampleOutputs
        // {
          build-and-copy = copyAll;
          # result/<example>/<variant>/ for every example.
          default = pkgs.linkFarm "upskill-hub-kernels" (
            lib.mapAttrsToList (name: path: { inherit name path; }) perExample
          );
        }
      );

      devShells = forAllSystems (
        system: lib.mapAttrs (_: out: out.devShells.${system}.default) exampleOutputs
      );
    };
}
