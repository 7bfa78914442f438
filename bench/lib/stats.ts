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

/** Counters of the process on the other end (the target), read before and after each run. */
export type PeerCounters = Record<string, number>;

export interface SideStats {
  /** Wall time of the measured runs, ms. */
  time: Summary;
  /** Median CPU time (user + system) of this process per run, ms. */
  cpuMs: number;
  /** Median per-run increase of each peer counter (e.g. the target's CPU ms, requests). */
  peer: PeerCounters;
  /** Peak RSS in KiB while this side ran (whole-process peak if it cannot be reset). */
  peakRssKib: number;
}

export interface Duel {
  a: SideStats;
  b: SideStats;
  /** median(A) / median(B): the judged figure. */
  ratio: number;
  /** Median of the per-round ratios A/B (a second view, robust to drift between rounds). */
  pairedRatio: number;
  rounds: number;
}

interface Samples {
  ms: number[];
  cpuMs: number[];
  peer: Map<string, number[]>;
  peakRssKib: number;
}

function sideStats(s: Samples): SideStats {
  const peer: PeerCounters = {};
  for (const [name, values] of s.peer) peer[name] = summarise(values).median;
  return {
    time: summarise(s.ms),
    cpuMs: summarise(s.cpuMs).median,
    peer,
    peakRssKib: s.peakRssKib,
  };
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
    /** Stop after this many ms of rounds (once 3 are done): a loaded machine ends sooner. */
    budgetMs?: number;
    peerCounters?: () => Promise<PeerCounters>;
  },
): Promise<Duel> {
  for (let i = 0; i < opts.warmup; i++) {
    await a.run();
    await b.run();
  }
  const samples = new Map<Contender, Samples>();
  for (const c of [a, b]) samples.set(c, { ms: [], cpuMs: [], peer: new Map(), peakRssKib: 0 });

  const measure = async (c: Contender): Promise<number> => {
    const s = samples.get(c) as Samples;
    global.gc?.(); // a collection owed by the other side should not land in this one
    const peerBefore = await opts.peerCounters?.();
    resetPeakRss();
    const cpuBefore = process.cpuUsage();
    const ms = await c.run();
    const cpu = process.cpuUsage(cpuBefore);
    s.peakRssKib = Math.max(s.peakRssKib, peakRssKib());
    const peerAfter = await opts.peerCounters?.();
    s.ms.push(ms);
    s.cpuMs.push((cpu.user + cpu.system) / 1000);
    for (const [name, after] of Object.entries(peerAfter ?? {})) {
      const list = s.peer.get(name) ?? [];
      list.push(after - (peerBefore?.[name] ?? 0));
      s.peer.set(name, list);
    }
    return ms;
  };
  const ratios: number[] = [];
  const started = performance.now();
  for (let i = 0; i < opts.rounds; i++) {
    if (i >= 3 && opts.budgetMs !== undefined && performance.now() - started > opts.budgetMs) break;
    let msA: number, msB: number;
    if (i % 2 === 0) {
      msA = await measure(a);
      msB = await measure(b);
    } else {
      msB = await measure(b);
      msA = await measure(a);
    }
    ratios.push(msA / msB);
    opts.onRound?.(i, msA, msB);
  }
  const sa = sideStats(samples.get(a) as Samples);
  const sb = sideStats(samples.get(b) as Samples);
  return {
    a: sa,
    b: sb,
    ratio: sa.time.median / sb.time.median,
    pairedRatio: summarise(ratios).median,
    rounds: ratios.length,
  };
}
