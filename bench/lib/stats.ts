/**
 * Side-by-side timing: alternate the two contenders, summarise each as min/median/max, judge
 * the MEDIAN RATIO against a target. Absolute times are printed for reading, never judged: the
 * machine is shared, and what both sides pay alike (CPU steal, GC, a busy neighbour) cancels out
 * in a ratio taken from the same rounds.
 */
import { readFileSync, writeFileSync } from "node:fs";

export interface Summary {
  min: number;
  median: number;
  max: number;
}

export function summarise(samples: readonly number[]): Summary {
  if (samples.length === 0) throw new Error("no samples");
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median =
    sorted.length % 2 === 1
      ? (sorted[mid] as number)
      : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return { min: sorted[0] as number, median, max: sorted[sorted.length - 1] as number };
}

/** Resident-set high-water mark of this process, in KiB (Linux VmHWM, else maxRSS). */
export function peakRssKib(): number {
  try {
    const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync("/proc/self/status", "utf8"));
    if (m?.[1]) return Number(m[1]);
  } catch {
    // not Linux: fall through
  }
  return process.resourceUsage().maxRSS;
}

/**
 * Lowers the high-water mark to the current RSS (Linux ≥ 4.0, "5" > clear_refs), so the next
 * peakRssKib() is the peak of what ran in between. Returns false where that is not possible;
 * the peak then covers the process's whole life so far.
 */
export function resetPeakRss(): boolean {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
    return true;
  } catch {
    return false;
  }
}

export interface Contender {
  name: string;
  /** Runs once and returns the measured milliseconds (set-up and tear-down left out). */
  run(): Promise<number>;
}

export interface Duel {
  a: Summary;
  b: Summary;
  /** median(A) / median(B) */
  ratio: number;
  /** Median of the per-round ratios A/B (a second view, robust to drift between rounds). */
  pairedRatio: number;
  /** CPU time (user + system) of this process while each side ran, medians in ms. */
  cpuA: number;
  cpuB: number;
  /** Same for the other process of the test (the target server), if `otherCpuMs` was given. */
  otherCpuA?: number;
  otherCpuB?: number;
  /** Peak RSS in KiB while each side ran (whole-process peak if it cannot be reset). */
  peakRssA: number;
  peakRssB: number;
  rounds: number;
}

/**
 * `warmup` unmeasured rounds, then `rounds` measured rounds; each round runs both contenders,
 * A first in even rounds and B first in odd ones, so neither always runs on a warmer machine.
 */
export async function duel(
  a: Contender,
  b: Contender,
  opts: {
    warmup: number;
    rounds: number;
    onRound?: (i: number, ta: number, tb: number) => void;
    /** Cumulative CPU ms of the process on the other end (the target), read around each run. */
    otherCpuMs?: () => Promise<number>;
  },
): Promise<Duel> {
  for (let i = 0; i < opts.warmup; i++) {
    await a.run();
    await b.run();
  }
  const ta: number[] = [];
  const tb: number[] = [];
  let peakRssA = 0;
  let peakRssB = 0;
  const cpu = new Map<Contender, { own: number[]; other: number[] }>([
    [a, { own: [], other: [] }],
    [b, { own: [], other: [] }],
  ]);
  const measure = async (c: Contender): Promise<[number, number]> => {
    global.gc?.(); // a collection owed by the other side should not land in this one
    const otherBefore = await opts.otherCpuMs?.();
    resetPeakRss();
    const before = process.cpuUsage();
    const ms = await c.run();
    const used = process.cpuUsage(before);
    const rss = peakRssKib();
    const otherAfter = await opts.otherCpuMs?.();
    const seen = cpu.get(c) as { own: number[]; other: number[] };
    seen.own.push((used.user + used.system) / 1000);
    if (otherBefore !== undefined && otherAfter !== undefined)
      seen.other.push(otherAfter - otherBefore);
    return [ms, rss];
  };
  for (let i = 0; i < opts.rounds; i++) {
    let msA: number, msB: number, rssA: number, rssB: number;
    if (i % 2 === 0) {
      [msA, rssA] = await measure(a);
      [msB, rssB] = await measure(b);
    } else {
      [msB, rssB] = await measure(b);
      [msA, rssA] = await measure(a);
    }
    ta.push(msA);
    tb.push(msB);
    peakRssA = Math.max(peakRssA, rssA);
    peakRssB = Math.max(peakRssB, rssB);
    opts.onRound?.(i, msA, msB);
  }
  const sa = summarise(ta);
  const sb = summarise(tb);
  return {
    a: sa,
    b: sb,
    ratio: sa.median / sb.median,
    pairedRatio: summarise(ta.map((x, i) => x / (tb[i] as number))).median,
    cpuA: summarise(cpu.get(a)?.own ?? []).median,
    cpuB: summarise(cpu.get(b)?.own ?? []).median,
    ...(opts.otherCpuMs && {
      otherCpuA: summarise(cpu.get(a)?.other ?? []).median,
      otherCpuB: summarise(cpu.get(b)?.other ?? []).median,
    }),
    peakRssA,
    peakRssB,
    rounds: opts.rounds,
  };
}
