import type { FileProbe } from "../types.js";
import { fileVerdict } from "./well-known.js";
import type { FileVerdict } from "./well-known.js";

export const SITEMAP_XML_PATH = "/sitemap.xml";

/** 200 whose (decoded, gunzipped) body contains `<urlset` or `<sitemapindex`. */
function sitemapContentOk(text: string): boolean {
  return text.includes("<urlset") || text.includes("<sitemapindex");
}

export function checkSitemapXml(probe: FileProbe): FileVerdict {
  return fileVerdict(probe, sitemapContentOk);
}
