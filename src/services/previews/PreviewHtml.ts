/**
 * PreviewHtml owns reading a page's preview out of its HTML (docs/decisions/previews.md "What is read from a page"):
 * title, description, image and site name, from Open Graph (`og:*`), then Twitter cards (`twitter:*`), then the
 * document's `<title>` and `<meta name="description">`. The bytes are decoded by the charset the response or the
 * page's own `<meta charset>` names (UTF-8 otherwise), then tokenised by htmlparser2, a forgiving streaming parser
 * that decodes entities in text and attributes and knows raw-text elements (`<script>`, `<style>`): a hand-written
 * scanner would have to relearn each of those. Reading stops at `<body>` (the head is what describes a page).
 * Every value is plain text for the client to draw as text, cleaned of control and text-direction characters and cut
 * to a bound; the image is an absolute http(s) URL or nothing.
 * Pure; safe from any fiber.
 */
import { Parser } from "htmlparser2"
import { normalizePreviewUrl } from "./PreviewUrl.js"

/** Bounds of what a preview holds, in code points (docs/contract.md "Link previews"). */
export const PreviewTextLimits = {
  title: 200,
  description: 500,
  siteName: 100
} as const

/** Raw text gathered for one field before it is cleaned: a `<title>` of a megabyte stops growing here. */
const RAW_TEXT_CAP = 4096

export interface PageMetadata {
  readonly title: string | undefined
  readonly description: string | undefined
  readonly image: string | undefined
  readonly siteName: string | undefined
}

/**
 * Text fit to show on one line or two: control characters become spaces, text-direction controls are dropped (they
 * would turn the rest of the line around: Unicode UAX #9), runs of white space become one space, and past `max`
 * code points the text is cut with an ellipsis. Empty → undefined.
 */
export const cleanText = (raw: string | undefined, max: number): string | undefined => {
  if (raw === undefined) return undefined
  const cleaned = raw
    .slice(0, RAW_TEXT_CAP)
    .replace(/\p{Bidi_Control}/gu, "")
    .replace(/[\p{Cc}\p{Zl}\p{Zp}\s]+/gu, " ")
    .trim()
  if (cleaned === "") return undefined
  const points = Array.from(cleaned)
  return points.length <= max ? cleaned : `${points.slice(0, max - 1).join("").trimEnd()}…`
}

/** The charset a `Content-Type` names, lower-cased, if any. */
const charsetOf = (contentType: string | undefined): string | undefined =>
  contentType === undefined ? undefined : /;\s*charset\s*=\s*"?([A-Za-z0-9._:-]+)/i.exec(contentType)?.[1]?.toLowerCase()

/**
 * HTML's prescan, reduced (WHATWG HTML "Determining the character encoding" §13.2.3.2): a byte order mark, else a
 * `<meta charset>` or `<meta http-equiv content="…charset=…">` in the first 1024 bytes.
 */
const sniffCharset = (body: Uint8Array): string | undefined => {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return "utf-8"
  if (body[0] === 0xfe && body[1] === 0xff) return "utf-16be"
  if (body[0] === 0xff && body[1] === 0xfe) return "utf-16le"
  const head = Buffer.from(body.subarray(0, 1024)).toString("latin1")
  return /<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)/i.exec(head)?.[1]?.toLowerCase()
}

/** The page's text: decoded by its charset, UTF-8 when none is named or the name is unknown. */
export const decodeHtml = (body: Uint8Array, contentType: string | undefined): string => {
  const label = charsetOf(contentType) ?? sniffCharset(body) ?? "utf-8"
  try {
    return new TextDecoder(label).decode(body)
  } catch {
    // An unknown label (RangeError): UTF-8, as a browser falls back to a default.
    return new TextDecoder("utf-8").decode(body)
  }
}

/** The first value given for each key; later ones are ignored (Open Graph: the first `og:image` is the main one). */
const firstOf = (seen: Map<string, string>, key: string, value: string | undefined) => {
  if (value !== undefined && value.trim() !== "" && !seen.has(key)) seen.set(key, value)
}

/** An absolute http(s) image URL resolved against `base`, or undefined. */
const imageUrl = (raw: string | undefined, base: string): string | undefined => {
  if (raw === undefined) return undefined
  try {
    return normalizePreviewUrl(new URL(raw.trim(), base).toString())
  } catch {
    return undefined
  }
}

/** The preview of the page at `pageUrl` (its final URL, after redirects), from its decoded HTML. */
export const parsePreviewHtml = (html: string, pageUrl: string): PageMetadata => {
  const meta = new Map<string, string>()
  let title: string | undefined
  let inTitle = false
  let titleDone = false
  let foreign = 0
  let base = pageUrl
  let baseSet = false
  const parser = new Parser({
    onopentag(name, attributes) {
      switch (name) {
        case "body":
          // The head is over: what describes the page is read (and a body may be most of a large page).
          parser.pause()
          return
        case "svg":
        case "math":
          // An SVG's <title> names a drawing, not the document (HTML: the document's title is an HTML element).
          foreign++
          return
        case "title":
          if (foreign === 0 && !titleDone) {
            inTitle = true
            title = ""
          }
          return
        case "base":
          if (!baseSet && attributes.href !== undefined) {
            baseSet = true
            try {
              base = new URL(attributes.href.trim(), pageUrl).toString()
            } catch {
              // An unusable base is ignored, as a browser ignores it.
            }
          }
          return
        case "meta": {
          const key = (attributes.property ?? attributes.name ?? attributes.itemprop)?.trim().toLowerCase()
          if (key !== undefined && key !== "") firstOf(meta, key, attributes.content)
          return
        }
      }
    },
    ontext(text) {
      if (inTitle && title !== undefined && title.length < RAW_TEXT_CAP) title += text
    },
    onclosetag(name) {
      if (name === "title" && inTitle) {
        inTitle = false
        titleDone = true
      } else if ((name === "svg" || name === "math") && foreign > 0) {
        foreign--
      }
    }
  }, { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true })
  parser.write(html)
  parser.end()
  const pick = (...keys: ReadonlyArray<string>) => keys.map((k) => meta.get(k)).find((v) => v !== undefined)
  return {
    title: cleanText(pick("og:title", "twitter:title") ?? title, PreviewTextLimits.title),
    description: cleanText(pick("og:description", "twitter:description", "description"), PreviewTextLimits.description),
    image: imageUrl(pick("og:image", "og:image:url", "og:image:secure_url", "twitter:image", "twitter:image:src"), base),
    siteName: cleanText(pick("og:site_name", "application-name"), PreviewTextLimits.siteName)
  }
}
