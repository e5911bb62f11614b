import { deflateSync } from 'node:zlib';

/**
 * Small PNG pictures for the demo data, drawn at seed time (nothing downloaded, no image library):
 * a diagonal two-colour gradient with a few soft discs, a few KB each. Deterministic: the same
 * arguments give the same bytes, so a second seed rewrites nothing that changed.
 */
export function demoPicture(options: { width?: number; height?: number; hue: number; variant: number }): Buffer {
  const { width = 320, height = 240, hue, variant } = options;
  const from = hsl(hue, 0.65, 0.62);
  const to = hsl((hue + 40 + variant * 25) % 360, 0.7, 0.42);
  const discs = [0, 1, 2].map((k) => ({
    x: width * (0.2 + ((variant * 37 + k * 29) % 60) / 100),
    y: height * (0.25 + ((variant * 23 + k * 41) % 50) / 100),
    r: Math.min(width, height) * (0.12 + k * 0.05),
  }));
  const stride = width * 3 + 1;
  const rows = Buffer.alloc(stride * height);
  // Scalar arithmetic, no array per pixel: the seed draws about fifty of these (seconds otherwise).
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const t = (x / width + y / height) / 2;
      let discsHere = 0;
      for (const disc of discs) if ((x - disc.x) ** 2 + (y - disc.y) ** 2 < disc.r ** 2) discsHere++;
      const at = y * stride + 1 + x * 3;
      for (let i = 0; i < 3; i++) {
        let value = from[i]! + (to[i]! - from[i]!) * t;
        for (let k = 0; k < discsHere; k++) value += (255 - value) * 0.35; // each disc lightens by 35 %
        rows[at + i] = Math.round(value);
      }
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(rows, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

const PNG_SIGNATURE = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]);

function chunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), body.length + 4);
  return out;
}

// Node 20 has no zlib.crc32 (added in 22.2): the PNG chunk checksum, table-driven.
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** RGB (0..255) of a hue (degrees), saturation and lightness (0..1). */
function hsl(h: number, s: number, l: number): [number, number, number] {
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => {
    const k = (n + h / 30) % 12;
    return 255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1)));
  };
  return [f(0), f(8), f(4)];
}
