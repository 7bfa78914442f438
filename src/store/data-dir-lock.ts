import { linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../config-error.js";

/**
 * One process per DATA_DIR. LMDB itself lets several processes share an environment, but the
 * embedded store clears every lease at open (a lease can only belong to a previous, dead run),
 * which is right only when nobody else is using the directory. So the directory is locked by a
 * file naming the owner's pid and the kernel's start time of that pid: a lock whose process is
 * gone (or a zombie: exited, not yet reaped), or whose pid now belongs to another process (a
 * restarted container is often pid 1 again), is stale and taken over.
 */
const LOCK_FILE = "secsnap.lock";

/** Directories this process holds: a second open in the same process is refused too. */
const held = new Set<string>();

interface Owner {
  pid: number;
  /** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); absent off Linux. */
  started?: string;
}

/** The fields of /proc/<pid>/stat after the command name (field 3 first); undefined off Linux
 * or when there is no such process. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

function startTime(pid: number): string | undefined {
  return statFields(pid)?.[19];
}

function alive(owner: Owner): boolean {
  if (owner.pid === process.pid) return false; // a previous run that had our pid
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: it exists, under another user.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const fields = statFields(owner.pid);
  // A zombie (state Z) has exited and only waits for its parent to read its status, which never
  // comes where PID 1 does not reap orphans (a container without an init): kill(pid, 0) still
  // succeeds on it, but it holds nothing.
  if (fields?.[0] === "Z") return false;
  if (owner.started === undefined) return true;
  const now = fields?.[19];
  return now === undefined || now === owner.started;
}

function readOwner(path: string): Owner | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<Owner>;
    return typeof parsed.pid === "number" ? (parsed as Owner) : undefined;
  } catch {
    return undefined; // unreadable or half-written: treated as stale
  }
}

/**
 * Takes the directory's lock or throws a ConfigError naming DATA_DIR. Returns the unlock, which
 * deletes the lock file only while it is still ours.
 */
export function lockDataDir(dir: string): () => void {
  if (held.has(dir)) {
    throw new ConfigError("DATA_DIR", `is already open in this process (${dir})`);
  }
  const path = join(dir, LOCK_FILE);
  const me: Owner = { pid: process.pid };
  const started = startTime(process.pid);
  if (started !== undefined) me.started = started;
  // Written whole under a private name, then linked into place: link() fails atomically when
  // the lock exists, and nobody ever reads a half-written lock.
  const draft = `${path}.${process.pid}`;
  try {
    writeFileSync(draft, JSON.stringify(me), { mode: 0o644 });
  } catch (error) {
    throw new ConfigError("DATA_DIR", `cannot be written (${dir}): ${(error as Error).message}`);
  }
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(draft, path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
          throw new ConfigError(
            "DATA_DIR",
            `cannot be locked (${path}): ${(error as Error).message}`,
          );
        }
        const owner = readOwner(path);
        if (owner && alive(owner)) {
          throw new ConfigError(
            "DATA_DIR",
            `is in use by another secsnap process (pid ${owner.pid}): one process per directory (${dir})`,
          );
        }
        // Stale: removed only if it still names the same dead owner, then linked again.
        if (JSON.stringify(readOwner(path)) === JSON.stringify(owner)) {
          try {
            unlinkSync(path);
          } catch {
            // another process removed it first; the next link decides
          }
        }
        continue;
      }
      held.add(dir);
      return () => {
        held.delete(dir);
        if (readOwner(path)?.pid === process.pid) {
          try {
            unlinkSync(path);
          } catch {
            // already gone
          }
        }
      };
    }
  } finally {
    try {
      unlinkSync(draft);
    } catch {
      // never written
    }
  }
  throw new ConfigError(
    "DATA_DIR",
    `could not be locked (${path}): another process keeps taking it`,
  );
}
