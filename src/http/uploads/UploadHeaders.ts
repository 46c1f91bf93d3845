/**
 * UploadHeaders: the HTTP headers of uploads, read and written (docs/contract.md "Uploads"): the file name a client
 * gives in `Content-Disposition` (RFC 6266 §4.3, with RFC 8187's `filename*`, which wins), the one `Range` a download
 * honours (RFC 9110 §14.2), and the headers a stored file is served with — `nosniff`, a sandboxing CSP, attachment
 * unless the type may show inline, caching for content that never changes. Pure; no state. Every reader takes any
 * string and never throws: a header it cannot read counts as absent.
 */
import { isInlineType } from "../../services/uploads/UploadNames.js"

/** Longest header value read at all; real ones are far shorter. */
const MAX_HEADER_CHARS = 4096

/**
 * The parameters of a `Content-Disposition` value, names lower-cased; a quoted-string unescaped (RFC 9110 §5.6.4).
 * The first occurrence of a name wins.
 */
const dispositionParameters = (value: string): Map<string, string> => {
  const parameters = new Map<string, string>()
  let i = value.indexOf(";")
  if (i === -1) return parameters
  i += 1
  while (i < value.length) {
    while (i < value.length && (value[i] === " " || value[i] === "\t" || value[i] === ";")) i += 1
    const eq = value.indexOf("=", i)
    if (eq === -1) break
    const name = value.slice(i, eq).trim().toLowerCase()
    i = eq + 1
    while (i < value.length && (value[i] === " " || value[i] === "\t")) i += 1
    let v = ""
    if (value[i] === "\"") {
      i += 1
      while (i < value.length && value[i] !== "\"") {
        if (value[i] === "\\" && i + 1 < value.length) i += 1
        v += value[i]
        i += 1
      }
      i += 1
      const semi = value.indexOf(";", i)
      i = semi === -1 ? value.length : semi
    } else {
      const semi = value.indexOf(";", i)
      const end = semi === -1 ? value.length : semi
      v = value.slice(i, end).trim()
      i = end
    }
    if (name !== "" && !parameters.has(name)) parameters.set(name, v)
  }
  return parameters
}

/** RFC 8187 §3.2 `ext-value`: `charset'language'pct-encoded`, UTF-8 or ISO-8859-1; undefined when it is not one. */
const extValue = (raw: string): string | undefined => {
  const m = /^([A-Za-z0-9!#$%&+^_`{}~-]+)'[A-Za-z0-9-]*'(.*)$/.exec(raw)
  if (m === null) return undefined
  const charset = m[1]!.toLowerCase()
  const encoded = m[2]!
  if (!/^(?:[A-Za-z0-9!#$&+.^_`|~-]|%[0-9A-Fa-f]{2})*$/.test(encoded)) return undefined
  if (charset === "utf-8") {
    try {
      return decodeURIComponent(encoded)
    } catch {
      return undefined
    }
  }
  if (charset === "iso-8859-1") {
    return encoded.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
  }
  return undefined
}

/**
 * The file name a `Content-Disposition` request header gives (soju's filehost.md: the client names the file there):
 * `filename*` when it decodes, else `filename`; undefined when there is none. Not yet safe to store: UploadNames
 * sanitises it.
 */
export const fileNameOf = (header: string | undefined): string | undefined => {
  if (header === undefined || header.length > MAX_HEADER_CHARS) return undefined
  const parameters = dispositionParameters(header)
  const extended = parameters.get("filename*")
  const decoded = extended === undefined ? undefined : extValue(extended)
  if (decoded !== undefined && decoded !== "") return decoded
  const plain = parameters.get("filename")
  return plain === undefined || plain === "" ? undefined : plain
}

export type RangeRequest =
  /** No usable Range: answer the whole file (RFC 9110 §14.2 lets a server ignore what it does not serve). */
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Unsatisfiable" }
  /** Inclusive byte positions within the file. */
  | { readonly _tag: "Part"; readonly start: number; readonly end: number }

const WHOLE: RangeRequest = { _tag: "Whole" }
const UNSATISFIABLE: RangeRequest = { _tag: "Unsatisfiable" }

/**
 * The one byte range of `header` for a file of `size` bytes (RFC 9110 §14.1.2): `first-last`, `first-` or
 * `-suffix`. Several ranges, another unit, or anything malformed is answered whole (a multipart answer is not worth
 * its cost for a chat upload); a range starting past the end, a zero suffix, or any range of an empty file is
 * Unsatisfiable (416).
 */
export const parseRange = (header: string | undefined, size: number): RangeRequest => {
  if (header === undefined || header.length > 200) return WHOLE
  const m = /^\s*bytes\s*=\s*(\d{0,15})\s*-\s*(\d{0,15})\s*$/i.exec(header)
  if (m === null) return WHOLE
  const [, first, last] = m
  if (first === "" && last === "") return WHOLE
  if (first === "") {
    const suffix = Number(last)
    if (suffix === 0 || size === 0) return UNSATISFIABLE
    return { _tag: "Part", start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(first)
  if (last !== "" && Number(last) < start) return WHOLE
  if (start >= size) return UNSATISFIABLE
  const end = last === "" ? size - 1 : Math.min(Number(last), size - 1)
  return { _tag: "Part", start, end }
}

/** `attachment` or `inline` with the name as RFC 6266 §4.3 asks: an ASCII `filename` and the exact `filename*`. */
export const contentDisposition = (name: string, contentType: string): string => {
  const kind = isInlineType(contentType) ? "inline" : "attachment"
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, "_")
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `${kind}; filename="${fallback}"; filename*=UTF-8''${exact}`
}

/**
 * Whatever a stored file holds, a browser that opens it runs nothing and fetches nothing: a sandboxed document with
 * no origin, no source allowed but the file itself shown as an image or media, framed by no one.
 */
export const UPLOAD_CSP = "sandbox; default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'"

/**
 * A stored file never changes (a new upload is a new id), so caches may keep it; `private` because deleting the
 * account must not leave copies in shared caches the operator does not control.
 */
export const UPLOAD_CACHE_CONTROL = "private, max-age=604800, immutable"

/** The headers every answer about a stored file carries, whatever its status. */
export const servedHeaders = (
  file: { readonly name: string; readonly contentType: string; readonly sha256: string; readonly createdAt: Date }
): Record<string, string> => ({
  "content-type": file.contentType,
  "content-disposition": contentDisposition(file.name, file.contentType),
  "x-content-type-options": "nosniff",
  "content-security-policy": UPLOAD_CSP,
  "referrer-policy": "no-referrer",
  "cross-origin-resource-policy": "cross-origin",
  "cache-control": UPLOAD_CACHE_CONTROL,
  "etag": `"${file.sha256}"`,
  "last-modified": file.createdAt.toUTCString(),
  "accept-ranges": "bytes"
})

/** Whether `If-None-Match` names this ETag (RFC 9110 §13.1.2: weak comparison, `*` matches). */
export const matchesEtag = (header: string | undefined, etag: string): boolean => {
  if (header === undefined) return false
  return header.split(",").some((tag) => {
    const t = tag.trim()
    return t === "*" || t === etag || t === `W/${etag}`
  })
}
