/** Why dist/ under root must be rebuilt, or undefined when it is current. */
export declare function staleReason(root?: string): string | undefined;
/** The stamp's text for a build started at `started` (the build recipe, then the time). */
export declare function stampText(started: Date): string;
/** Bundles src/cli/main.ts into dist/ (esbuild); throws with esbuild's messages on failure. */
export declare function build(root?: string): void;
