/**
 * The pure parts of link previews (docs/decisions/previews.md): what is read from a page (PreviewHtml), which URLs are
 * fetched and in what form (PreviewUrl), and what bytes are served as an image (ImageBytes). Tables of named cases.
 */
import { describe, expect, it } from "@effect/vitest"
import { IMAGE_TYPES, imageDimensions, judgeImage, sniffImage } from "../../../src/services/previews/ImageBytes.js"
import { cleanText, decodeHtml, parsePreviewHtml, PreviewTextLimits } from "../../../src/services/previews/PreviewHtml.js"
import { normalizePreviewUrl, redirectTarget } from "../../../src/services/previews/PreviewUrl.js"

const PAGE = "https://site.example/articles/1"

describe("parsePreviewHtml", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly html: string
    readonly expected: Partial<Record<"title" | "description" | "image" | "siteName", string | undefined>>
  }> = [
    {
      name: "Open Graph wins over Twitter cards and <title>",
      html: `<html><head><title>Plain</title>
        <meta name="twitter:title" content="Twitter">
        <meta property="og:title" content="Open Graph">
        <meta property="og:description" content="What it is">
        <meta property="og:image" content="https://cdn.example/a.png">
        <meta property="og:site_name" content="Site"></head><body></body></html>`,
      expected: { title: "Open Graph", description: "What it is", image: "https://cdn.example/a.png", siteName: "Site" }
    },
    {
      name: "Twitter cards when there is no Open Graph",
      html: `<head><meta name="twitter:title" content="T"><meta name="twitter:description" content="D">
        <meta name="twitter:image:src" content="/img.jpg"></head>`,
      expected: { title: "T", description: "D", image: "https://site.example/img.jpg" }
    },
    {
      name: "<title> and meta description, entities decoded, whitespace folded",
      html: `<head><TITLE>  Fish &amp; Chips
        &#8212; a &quot;guide&quot; </TITLE><meta name="Description" content="Crisp &lt;and&gt; hot"></head>`,
      expected: { title: "Fish & Chips — a \"guide\"", description: "Crisp <and> hot", image: undefined }
    },
    {
      name: "the first value of a key wins",
      html: `<meta property="og:image" content="https://a.example/1.png"><meta property="og:image" content="https://a.example/2.png">`,
      expected: { image: "https://a.example/1.png" }
    },
    {
      name: "a relative image resolves against <base href>",
      html: `<head><base href="https://static.example/assets/"><meta property="og:image" content="x/y.webp"></head>`,
      expected: { image: "https://static.example/assets/x/y.webp" }
    },
    {
      name: "an image that is not http(s) is dropped",
      html: `<meta property="og:image" content="javascript:alert(1)"><meta property="og:title" content="T">`,
      expected: { title: "T", image: undefined }
    },
    {
      name: "an SVG's <title> is not the document's",
      html: `<svg><title>icon</title></svg><title>Page</title>`,
      expected: { title: "Page" }
    },
    {
      name: "script contents are not markup",
      html: `<head><script>var s = "<title>fake</title><meta property='og:title' content='fake'>"</script><title>Real</title></head>`,
      expected: { title: "Real" }
    },
    {
      name: "reading stops at <body>",
      html: `<head><title>Head</title></head><body><meta property="og:description" content="in the body"></body>`,
      expected: { title: "Head", description: undefined }
    },
    {
      name: "control and text-direction characters are removed",
      html: `<title>a\u0007b\u202Ecd\u2066e</title>`,
      expected: { title: "a bcde" }
    },
    {
      name: "nothing to show",
      html: `<html><head></head><body><p>hello</p></body></html>`,
      expected: { title: undefined, description: undefined, image: undefined, siteName: undefined }
    }
  ]
  for (const c of cases) {
    it(c.name, () => {
      const page = parsePreviewHtml(c.html, PAGE)
      for (const [key, value] of Object.entries(c.expected)) expect(page[key as keyof typeof page], key).toBe(value)
    })
  }

  it("cuts a long title at its bound with an ellipsis", () => {
    const page = parsePreviewHtml(`<title>${"é".repeat(1000)}</title>`, PAGE)
    expect(Array.from(page.title ?? "")).toHaveLength(PreviewTextLimits.title)
    expect(page.title?.endsWith("…")).toBe(true)
  })

  it("cleanText: empty is undefined, short text is kept", () => {
    expect(cleanText("  \n\t ", 10)).toBeUndefined()
    expect(cleanText("ok", 10)).toBe("ok")
  })
})

describe("decodeHtml", () => {
  const latin1 = Buffer.from([0x3c, 0x74, 0x69, 0x74, 0x6c, 0x65, 0x3e, 0x63, 0x61, 0x66, 0xe9]) // "<title>café"
  it("uses the Content-Type charset", () => {
    expect(decodeHtml(latin1, "text/html; charset=windows-1252")).toBe("<title>café")
  })
  it("uses <meta charset> in the first 1024 bytes", () => {
    const body = Buffer.concat([Buffer.from(`<meta charset="iso-8859-1">`), latin1])
    expect(decodeHtml(body, "text/html")).toContain("café")
  })
  it("falls back to UTF-8 for an unknown charset", () => {
    expect(decodeHtml(Buffer.from("<title>naïve"), "text/html; charset=x-unknown-thing")).toBe("<title>naïve")
  })
})

describe("normalizePreviewUrl", () => {
  const cases: ReadonlyArray<readonly [string, string | undefined]> = [
    ["https://example.com/a?b=1#frag", "https://example.com/a?b=1"],
    ["HTTP://Example.COM:80/", "http://example.com/"],
    ["https://[::1]:8443/x", "https://[::1]:8443/x"],
    ["ftp://example.com/", undefined],
    ["javascript:alert(1)", undefined],
    ["https://user:pass@example.com/", undefined],
    ["https://exa mple.com/", undefined],
    ["/relative", undefined],
    ["", undefined],
    [`https://example.com/${"a".repeat(2048)}`, undefined]
  ]
  for (const [raw, expected] of cases) {
    it(`${raw.slice(0, 40)} → ${String(expected)}`, () => expect(normalizePreviewUrl(raw)).toBe(expected))
  }

  it("resolves a redirect's Location against the URL that answered", () => {
    expect(redirectTarget("http://a.example/x/y", "/z")).toBe("http://a.example/z")
    expect(redirectTarget("http://a.example/x/y", "https://b.example/")).toBe("https://b.example/")
    expect(redirectTarget("http://a.example/", "file:///etc/passwd")).toBeUndefined()
  })
})

/** A PNG signature and IHDR chunk declaring `width` × `height`. */
const pngHeader = (width: number, height: number) => {
  const b = Buffer.alloc(33)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(b, 0)
  b.writeUInt32BE(13, 8)
  b.write("IHDR", 12, "latin1")
  b.writeUInt32BE(width, 16)
  b.writeUInt32BE(height, 20)
  return b
}

describe("ImageBytes", () => {
  it("knows the served types by their signatures, and nothing else", () => {
    expect(sniffImage(pngHeader(1, 1))).toBe("image/png")
    expect(sniffImage(Buffer.from("GIF89a\x01\x00\x01\x00", "latin1"))).toBe("image/gif")
    expect(sniffImage(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBe("image/jpeg")
    expect(sniffImage(Buffer.from("RIFF\0\0\0\0WEBPVP8X", "latin1"))).toBe("image/webp")
    expect(sniffImage(Buffer.from("\0\0\0\x1cftypavif\0\0\0\0mif1avif", "latin1"))).toBe("image/avif")
    expect(sniffImage(Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`))).toBeUndefined()
    expect(sniffImage(Buffer.from("<!doctype html>"))).toBeUndefined()
    expect(IMAGE_TYPES.has("image/svg+xml")).toBe(false)
  })

  it("reads the declared size and refuses a decompression bomb", () => {
    expect(imageDimensions(pngHeader(640, 480), "image/png")).toEqual({ width: 640, height: 480 })
    expect(imageDimensions(Buffer.from("GIF89a\x20\x03\x58\x02", "latin1"), "image/gif")).toEqual({ width: 800, height: 600 })
    expect(judgeImage(pngHeader(640, 480))).toEqual({ type: "image/png" })
    expect(judgeImage(pngHeader(30_000, 30_000))).toHaveProperty("refused")
    expect(judgeImage(pngHeader(0, 10))).toHaveProperty("refused")
  })

  it("reads a JPEG's frame size past the segments before it", () => {
    const jpeg = Buffer.from([
      0xff, 0xd8, // SOI
      0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, // APP0, 2 bytes of payload
      0xff, 0xc0, 0x00, 0x0b, 0x08, 0x01, 0xe0, 0x02, 0x80, 0x01, 0x01, 0x11, 0x00 // SOF0 480 × 640
    ])
    expect(imageDimensions(jpeg, "image/jpeg")).toEqual({ width: 640, height: 480 })
    expect(judgeImage(Buffer.from([0xff, 0xd8, 0xff, 0x00]))).toHaveProperty("refused")
  })
})
