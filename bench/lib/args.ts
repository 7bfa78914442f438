/**
 * The names a benchmark part was asked for on its command line (all of them when none), or
 * undefined after saying which are unknown.
 */
export function chosenNames<Name extends string>(
  known: readonly Name[],
  what: string,
  argv: readonly string[] = process.argv.slice(2),
): Name[] | undefined {
  const wanted = argv.filter((a) => a !== "--");
  const unknown = wanted.filter((a) => !(known as readonly string[]).includes(a));
  if (unknown.length > 0) {
    console.error(`unknown ${what}(s): ${unknown.join(", ")}; choose from ${known.join(", ")}`);
    return undefined;
  }
  return wanted.length > 0 ? (wanted as Name[]) : [...known];
}
