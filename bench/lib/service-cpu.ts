/**
 * A service's CPU time so far in µs, from its /metrics (prom-client's process counter, read from
 * process.cpuUsage); NaN when it has none. Printed beside wall times: the host's load moves it
 * least.
 */
export async function serviceCpuMicros(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const value = /^process_cpu_seconds_total (\S+)$/m.exec(text)?.[1];
  return value === undefined ? NaN : Number(value) * 1e6;
}
