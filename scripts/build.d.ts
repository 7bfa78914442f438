/** Why dist/ under root must be rebuilt, or undefined when it is current. */
export declare function staleReason(root?: string): string | undefined;
/** Compiles src/ to dist/ (tsconfig.build.json); throws with tsc's output on failure. */
export declare function build(root?: string): void;
