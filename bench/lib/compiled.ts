import { build, staleReason } from "../../scripts/build.js";

/**
 * Compiles dist/ when it is older than src/, saying why: the services a part runs use the
 * compiled build, built once here rather than by each of them at its start.
 */
export function compiledBuild(): void {
  const stale = staleReason();
  if (stale === undefined) return;
  console.log(`${stale}; compiling it first`);
  build();
}
