// Linkify: splits message text into plain runs and web links, so that the view can build text nodes and anchors and
// never parse a message as HTML. Only http(s) and www. links; trailing punctuation that usually ends a sentence stays
// out of the link, and a closing parenthesis only belongs to it when the link opened one. Pure.

export type Segment = { readonly kind: "text"; readonly text: string } | { readonly kind: "link"; readonly text: string; readonly href: string }

const LINK = /\b(?:https?:\/\/|www\.)[^\s<>"\x00-\x1f]+/gi

const trimEnd = (url: string): string => {
  let end = url.length
  for (;;) {
    const c = url[end - 1]
    if (c === undefined) break
    if (".,:;!?'\"".includes(c)) end--
    else if (c === ")" && (url.slice(0, end).match(/\(/g)?.length ?? 0) < (url.slice(0, end).match(/\)/g)?.length ?? 0)) end--
    else break
  }
  return url.slice(0, end)
}

export const linkify = (text: string): ReadonlyArray<Segment> => {
  const out: Array<Segment> = []
  let last = 0
  for (const match of text.matchAll(LINK)) {
    const start = match.index
    const url = trimEnd(match[0])
    if (url.length === 0 || /^www\.$/i.test(url)) continue
    if (start > last) out.push({ kind: "text", text: text.slice(last, start) })
    out.push({ kind: "link", text: url, href: /^www\./i.test(url) ? `https://${url}` : url })
    last = start + url.length
  }
  if (last < text.length) out.push({ kind: "text", text: text.slice(last) })
  return out
}

/** IRC formatting (bold, colours, italics…): the client shows the text without it. */
export const stripFormatting = (text: string): string =>
  text.replace(/\x03(?:\d{1,2}(?:,\d{1,2})?)?|\x04(?:[0-9a-fA-F]{6}(?:,[0-9a-fA-F]{6})?)?|[\x02\x0f\x11\x16\x1d\x1e\x1f]/g, "")
