#!/usr/bin/env node
/**
 * A consistent copy of a running secsnap's DATA_DIR (docs/deploy.md, "DATA_DIR and its backup"):
 *   node deploy/backup-data-dir.mjs /var/lib/secsnap /backup/secsnap-$(date +%F)
 * The database is copied in one LMDB read transaction, so the copy is the state of one moment
 * even while the service writes; the signing key beside it is copied as it is. The lock file is
 * not: it belongs to the running process. Restore: stop the service, put the copy's files in an
 * empty DATA_DIR, start it.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { open } from "lmdb";

const [from, to] = process.argv.slice(2).map((path) => resolve(path));
if (!from || !to) {
  process.stderr.write("usage: node deploy/backup-data-dir.mjs DATA_DIR BACKUP_DIR\n");
  process.exit(1);
}
const database = join(from, "payments");
if (!existsSync(join(database, "data.mdb"))) {
  process.stderr.write(`backup: ${from} holds no secsnap database (${database}/data.mdb)\n`);
  process.exit(1);
}
if (existsSync(to) && readdirSync(to).length > 0) {
  process.stderr.write(`backup: ${to} is not empty; give a new directory\n`);
  process.exit(1);
}

mkdirSync(join(to, "payments"), { recursive: true, mode: 0o700 });
const root = open({ path: database, readOnly: true, maxDbs: 8 });
try {
  await root.backup(join(to, "payments"), false);
} finally {
  await root.close();
}
const key = join(from, "signing-key.json");
if (existsSync(key)) copyFileSync(key, join(to, "signing-key.json"));
process.stdout.write(`backup: ${from} copied to ${to}\n`);
