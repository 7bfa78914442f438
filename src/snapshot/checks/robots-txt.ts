import type { FileProbe } from "../types.js";
import { fileVerdict, isHtml, lines } from "./well-known.js";
import type { FileVerdict } from "./well-known.js";

export const ROBOTS_TXT_PATH = "/robots.txt";

const RULE_LINE = /^\s*(user-agent|allow|disallow|sitemap)\s*:/i;

/** 200, not HTML, and empty or with at least one user-agent/allow/disallow/sitemap line. */
function robotsContentOk(text: string, contentType: string | undefined): boolean {
  if (isHtml(text, contentType)) return false;
  if (text.trim() === "") return true;
  return lines(text).some((line) => RULE_LINE.test(line));
}

export function checkRobotsTxt(probe: FileProbe): FileVerdict {
  return fileVerdict(probe, robotsContentOk);
}
