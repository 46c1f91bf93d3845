/**
 * UploadNames: what an upload is called and how it may be shown (docs/decisions/uploads.md "Names and content
 * types"): the file name a client gave, made safe to store, to put in a URL and in a `Content-Disposition`; the
 * content type reduced to `type/subtype`, guessed from the name's extension when the client sent none; and which
 * types a browser may show inline (images, audio, video — never SVG or anything XML, which can carry script). Pure;
 * no state.
 */

/** Longest stored name, in code points: long enough for any real file name, short enough for an IRC line. */
export const MAX_NAME_CHARS = 100
/** Longest extension kept when a long name is cut. */
const MAX_EXTENSION_CHARS = 16
export const DEFAULT_NAME = "upload"
export const OCTET_STREAM = "application/octet-stream"

/**
 * Characters a name never keeps: controls and format characters (bidirectional overrides, zero-width marks: a name
 * like `gpj.exe` shown reversed), path separators, and what Windows refuses in a file name or shells and URLs read
 * specially. Each becomes `_`.
 */
const REFUSED = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}/\\:*?"<>|%#]/gu

/**
 * A stored name from whatever a client sent: NFC, refused characters replaced, runs of white space made one space,
 * no leading or trailing dot or space (no hidden file, no `..`), at most MAX_NAME_CHARS code points with the extension
 * kept; `upload` when nothing is left.
 */
export const sanitizeFileName = (raw: string): string => {
  let name = raw.normalize("NFC").replace(REFUSED, "_").replace(/\s+/gu, " ")
  name = name.replace(/^[\s.]+/u, "").replace(/[\s.]+$/u, "")
  const chars = Array.from(name)
  if (chars.length > MAX_NAME_CHARS) {
    const dot = name.lastIndexOf(".")
    const extension = dot > 0 ? Array.from(name.slice(dot)) : []
    const keep = extension.length > 1 && extension.length <= MAX_EXTENSION_CHARS ? extension : []
    name = chars.slice(0, MAX_NAME_CHARS - keep.length).join("").replace(/[\s.]+$/u, "") + keep.join("")
  }
  return name === "" ? DEFAULT_NAME : name
}

/** RFC 9110 §5.6.2 token characters, for `type/subtype`, without `*`: a wildcard names no type. */
const TOKEN = /^[!#$%&'+.^_`|~0-9a-z-]{1,127}$/

/** Extensions of the files people paste and drop into a chat, for clients that send no content type. */
const BY_EXTENSION: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  heic: "image/heic",
  bmp: "image/bmp",
  svg: "image/svg+xml",
  mp4: "video/mp4",
  webm: "video/webm",
  mov: "video/quicktime",
  mp3: "audio/mpeg",
  m4a: "audio/mp4",
  ogg: "audio/ogg",
  opus: "audio/ogg",
  wav: "audio/wav",
  flac: "audio/flac",
  txt: "text/plain",
  log: "text/plain",
  md: "text/markdown",
  json: "application/json",
  pdf: "application/pdf",
  zip: "application/zip",
  html: "text/html",
  htm: "text/html"
}

/**
 * The content type stored for an upload: the client's `type/subtype` in lower case without parameters when it is
 * well formed and says something, else the type of the name's extension, else application/octet-stream.
 */
export const normalizeContentType = (given: string | undefined, name: string): string => {
  const essence = (given ?? "").split(";")[0]!.trim().toLowerCase()
  const [type, subtype, ...more] = essence.split("/")
  if (more.length === 0 && type !== undefined && subtype !== undefined && TOKEN.test(type) && TOKEN.test(subtype)) {
    if (essence !== OCTET_STREAM) return essence
  }
  const dot = name.lastIndexOf(".")
  const extension = dot === -1 ? "" : name.slice(dot + 1).toLowerCase()
  return BY_EXTENSION[extension] ?? OCTET_STREAM
}

/**
 * Whether a browser may show the file in place: images, audio and video, except any type that is or holds XML (SVG
 * runs script when opened as a document). Everything else is `Content-Disposition: attachment`.
 */
export const isInlineType = (contentType: string): boolean => {
  const [type, subtype = ""] = contentType.split("/")
  if (subtype.includes("svg") || subtype.includes("xml")) return false
  return type === "image" || type === "audio" || type === "video"
}
