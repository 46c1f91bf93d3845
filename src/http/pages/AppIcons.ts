/**
 * AppIcons draws the web client's home-screen icons and encodes them as PNG (ISO/IEC 15948, the W3C PNG
 * specification): a white ring on the accent blue of the client's stylesheet, in a rounded square for the ordinary
 * icon, and full bleed with the ring inside the central 80 % for the maskable one (W3C Web App Manifest, "purpose":
 * maskable icons keep what matters in the safe zone, a circle of 40 % of the size around the centre). Drawn in code so
 * that the repository holds no binary file and the build needs no image tool; each edge is anti-aliased by
 * sampling every pixel 4 × 4 times. Pure; the routes draw each icon once, at start.
 */
import { deflateSync } from "node:zlib"

/** The client's accent (client/src/styles.css `--accent`, light). */
export const ICON_BACKGROUND: readonly [number, number, number] = [0x0b, 0x5c, 0xad]

const CRC_TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

/** CRC-32 as PNG's chunks use it (PNG §5.5; the table of its Annex D). */
export const crc32 = (bytes: Uint8Array): number => {
  let c = 0xffffffff
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

const chunk = (type: string, data: Buffer): Buffer => {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(data.length, 0)
  head.write(type, 4, "latin1")
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0)
  return Buffer.concat([head, data, crc])
}

/** A PNG of `size` × `size` RGBA pixels (8 bits each, no interlace, filter type None on every row). */
export const encodePng = (size: number, rgba: Uint8Array): Buffer => {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(size, 0)
  header.writeUInt32BE(size, 4)
  header[8] = 8 // bit depth
  header[9] = 6 // colour type: truecolour with alpha
  const rows = Buffer.alloc((size * 4 + 1) * size)
  for (let y = 0; y < size; y++) rows.set(rgba.subarray(y * size * 4, (y + 1) * size * 4), y * (size * 4 + 1) + 1)
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows, { level: 9 })),
    chunk("IEND", Buffer.alloc(0))
  ])
}

const SAMPLES = 4

/** Inside a square of side 1 with corners of radius `r` (r = 0: the whole square). */
const inRoundedSquare = (x: number, y: number, r: number) => {
  if (x < 0 || y < 0 || x > 1 || y > 1) return false
  const cx = Math.min(Math.max(x, r), 1 - r)
  const cy = Math.min(Math.max(y, r), 1 - r)
  return (x - cx) ** 2 + (y - cy) ** 2 <= r * r
}

/**
 * The icon at `size` pixels: `maskable` fills the square and draws the ring smaller (inside the safe zone). The ring
 * is a rope's loop with a gate: an annulus, and a bar across its right side.
 */
export const drawIcon = (size: number, maskable: boolean): Buffer => {
  const rgba = new Uint8Array(size * size * 4)
  const scale = maskable ? 0.72 : 1
  const outer = 0.3 * scale
  const inner = 0.19 * scale
  const corner = maskable ? 0 : 0.22
  for (let py = 0; py < size; py++) {
    for (let px = 0; px < size; px++) {
      let background = 0
      let ring = 0
      for (let sy = 0; sy < SAMPLES; sy++) {
        for (let sx = 0; sx < SAMPLES; sx++) {
          const x = (px + (sx + 0.5) / SAMPLES) / size
          const y = (py + (sy + 0.5) / SAMPLES) / size
          if (!inRoundedSquare(x, y, corner)) continue
          background++
          const d = Math.hypot(x - 0.5, y - 0.5)
          const gate = Math.abs(x - (0.5 + (outer + inner) / 2)) < (outer - inner) / 2 && Math.abs(y - 0.5) < outer * 0.9
          if ((d <= outer && d >= inner) || gate) ring++
        }
      }
      const n = SAMPLES * SAMPLES
      const cover = ring / n
      const i = (py * size + px) * 4
      rgba[i] = Math.round(ICON_BACKGROUND[0] * (1 - cover) + 255 * cover)
      rgba[i + 1] = Math.round(ICON_BACKGROUND[1] * (1 - cover) + 255 * cover)
      rgba[i + 2] = Math.round(ICON_BACKGROUND[2] * (1 - cover) + 255 * cover)
      rgba[i + 3] = Math.round((255 * background) / n)
    }
  }
  return encodePng(size, rgba)
}
