/**
 * ImageBytes owns telling what an image is from its bytes (docs/decisions/previews.md "The image proxy"): PNG, JPEG,
 * GIF, WebP or AVIF by their signatures — never by what the remote server claims, and never SVG, which is a document
 * that may carry script — and the width and height its header declares, so a small file that would unpack into a
 * huge bitmap (a decompression bomb) is refused before a browser tries. Pure; safe from any fiber.
 */

export type ImageType = "image/png" | "image/jpeg" | "image/gif" | "image/webp" | "image/avif"

export const IMAGE_TYPES: ReadonlySet<string> = new Set<ImageType>(["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"])

/** Largest picture served, in pixels (a 40-megapixel photo passes; a 30000 × 30000 bitmap does not). */
export const MAX_PIXELS = 40_000_000

const ascii = (bytes: Uint8Array, at: number, length: number) => Buffer.from(bytes.subarray(at, at + length)).toString("latin1")

/** An ISO BMFF `ftyp` box naming an AVIF brand (AV1 Image File Format §9.2), major or compatible. */
const isAvif = (bytes: Uint8Array): boolean => {
  if (bytes.length < 16 || ascii(bytes, 4, 4) !== "ftyp") return false
  const size = Math.min(Buffer.from(bytes).readUInt32BE(0), bytes.length, 256)
  for (let at = 8; at + 4 <= size; at += 4) {
    if (at === 12) continue // the minor version, not a brand
    const brand = ascii(bytes, at, 4)
    if (brand === "avif" || brand === "avis") return true
  }
  return false
}

/** The type the bytes are, among the served ones, or undefined. */
export const sniffImage = (bytes: Uint8Array): ImageType | undefined => {
  if (bytes.length >= 8 && bytes[0] === 0x89 && ascii(bytes, 1, 7) === "PNG\r\n\x1a\n") return "image/png"
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg"
  if (bytes.length >= 6 && (ascii(bytes, 0, 6) === "GIF87a" || ascii(bytes, 0, 6) === "GIF89a")) return "image/gif"
  if (bytes.length >= 12 && ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 4) === "WEBP") return "image/webp"
  if (isAvif(bytes)) return "image/avif"
  return undefined
}

export interface Dimensions {
  readonly width: number
  readonly height: number
}

/** JPEG: the first start-of-frame segment (ITU T.81 §B.2.2), walking the segments before it. */
const jpegDimensions = (b: Buffer): Dimensions | undefined => {
  let i = 2
  while (i + 9 <= b.length) {
    if (b[i] !== 0xff) return undefined
    const marker = b[i + 1]!
    if (marker === 0xff) {
      i++
      continue
    }
    // Markers without a length: TEM, SOI, RST0–7.
    if (marker === 0x01 || marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2
      continue
    }
    // SOF0–SOF15 but DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) }
    }
    i += 2 + b.readUInt16BE(i + 2)
  }
  return undefined
}

/** WebP: the VP8X canvas, or the VP8L / VP8 frame size (RFC 9649 §2.7, §3, §5). */
const webpDimensions = (b: Buffer): Dimensions | undefined => {
  if (b.length < 30) return undefined
  switch (ascii(b, 12, 4)) {
    case "VP8X":
      return { width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 }
    case "VP8L": {
      if (b[20] !== 0x2f) return undefined
      const bits = b.readUInt32LE(21)
      return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 }
    }
    case "VP8 ":
      if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return undefined
      return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff }
    default:
      return undefined
  }
}

/**
 * The declared size of an image of `type`; undefined when its header cannot be read. AVIF's size sits deep in its
 * boxes and is not read: null (not judged).
 */
export const imageDimensions = (bytes: Uint8Array, type: ImageType): Dimensions | undefined | null => {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  switch (type) {
    case "image/png":
      return b.length >= 24 && ascii(b, 12, 4) === "IHDR" ? { width: b.readUInt32BE(16), height: b.readUInt32BE(20) } : undefined
    case "image/gif":
      return b.length >= 10 ? { width: b.readUInt16LE(6), height: b.readUInt16LE(8) } : undefined
    case "image/jpeg":
      return jpegDimensions(b)
    case "image/webp":
      return webpDimensions(b)
    case "image/avif":
      return null
  }
}

/** Why these bytes are not served as an image, if they are not; else their type. */
export const judgeImage = (bytes: Uint8Array): { readonly type: ImageType } | { readonly refused: string } => {
  const type = sniffImage(bytes)
  if (type === undefined) return { refused: "not a PNG, JPEG, GIF, WebP or AVIF image" }
  const size = imageDimensions(bytes, type)
  if (size === undefined) return { refused: `an unreadable ${type} header` }
  if (size !== null && (size.width === 0 || size.height === 0 || size.width * size.height > MAX_PIXELS)) {
    return { refused: `${size.width} × ${size.height} pixels, more than ${MAX_PIXELS} or none` }
  }
  return { type }
}
