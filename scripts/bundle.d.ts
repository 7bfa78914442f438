import type * as esbuild from "esbuild";
/** esbuild, from the project's own dependencies; throws when it is not installed. */
export declare function loadEsbuild(root: string): typeof esbuild;
/** How the service's code is bundled, whatever the entry (the CLI, a benchmark's server). */
export declare function bundleOptions(root: string): esbuild.BuildOptions;
