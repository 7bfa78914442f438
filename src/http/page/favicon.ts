/**
 * The service's icon, served by itself (docs/http-api.md "The page"): an SVG for the pages'
 * `<link rel="icon">` and the same picture as a 16×16 ICO at /favicon.ico, which browsers and
 * crawlers ask for by themselves. Both made once, at start, and cacheable for a day.
 */

/** A shield with a check mark: the brand colour, white inside. */
export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">' +
  '<path d="M8 1 2 3v4.5C2 11.2 4.6 14 8 15c3.4-1 6-3.8 6-7.5V3z" fill="#1f6feb"/>' +
  '<path d="m5 8 2 2 4-4" fill="none" stroke="#fff" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round"/>' +
  "</svg>";

/** The same picture drawn in 16 rows of 16 pixels: S shield, C check mark, . transparent. */
const PIXELS = [
  "................",
  ".......SS.......",
  ".....SSSSSS.....",
  "...SSSSSSSSSS...",
  "..SSSSSSSSSSSS..",
  "..SSSSSSSSSCCS..",
  "..SSSSSSSSCCSS..",
  "..SSSSSSSCCSSS..",
  "..SCCSSSCCSSSS..",
  "..SSCCSCCSSSSS..",
  "...SSCCCSSSSS...",
  "...SSSCSSSSSS...",
  "....SSSSSSSS....",
  ".....SSSSSS.....",
  ".......SS.......",
  "................",
];

/** BGRA of each pixel kind. */
const COLOURS: Readonly<Record<string, readonly number[]>> = {
  S: [0xeb, 0x6f, 0x1f, 0xff],
  C: [0xff, 0xff, 0xff, 0xff],
  ".": [0, 0, 0, 0],
};

/**
 * An ICO holding one 16×16 32-bit bitmap: the directory, the bitmap header (its height counts
 * the colour rows and the mask rows), the colours bottom row first, then the 1-bit mask, all
 * zero (the alpha channel decides).
 */
function icoFile(): Buffer {
  const size = PIXELS.length;
  const colours = size * size * 4;
  const mask = size * 4; // 16 bits a row, padded to 32
  const bitmap = 40 + colours + mask;
  const out = Buffer.alloc(6 + 16 + bitmap);
  out.writeUInt16LE(1, 2); // type: icon
  out.writeUInt16LE(1, 4); // one image
  out.writeUInt8(size, 6);
  out.writeUInt8(size, 7);
  out.writeUInt16LE(1, 10); // colour planes
  out.writeUInt16LE(32, 12); // bits per pixel
  out.writeUInt32LE(bitmap, 14);
  out.writeUInt32LE(22, 18); // where the bitmap starts
  out.writeUInt32LE(40, 22); // BITMAPINFOHEADER
  out.writeInt32LE(size, 26);
  out.writeInt32LE(size * 2, 30);
  out.writeUInt16LE(1, 34);
  out.writeUInt16LE(32, 36);
  out.writeUInt32LE(colours + mask, 42);
  let at = 62;
  for (const row of [...PIXELS].reverse()) {
    for (const kind of row) {
      for (const byte of COLOURS[kind] ?? COLOURS["."]!) out.writeUInt8(byte, at++);
    }
  }
  return out;
}

export const FAVICON_ICO: Buffer = icoFile();

/** Icons change with a release at most: a day in any cache. */
export const FAVICON_CACHE_CONTROL = "public, max-age=86400";
