/**
 * PreviewUrl owns which URLs Belay fetches for a preview or proxies as an image (docs/decisions/previews.md "What is
 * fetched"): an absolute http or https URL of at most `MAX_URL_LENGTH` characters, with a host, without user or
 * password, its fragment dropped (the server never sees it, so `…#a` and `…#b` are one page and one cache row). The
 * form is the WHATWG URL parser's serialisation, so two spellings of one URL (`HTTP://Example.COM:80/`) share a row.
 * Pure; safe from any fiber.
 */

/** The longest URL fetched, before and after normalising; a longer one is refused, never cut. */
export const MAX_URL_LENGTH = 2048

/** The URL as it is fetched and cached, or undefined when it is not one Belay fetches. */
export const normalizePreviewUrl = (raw: string): string | undefined => {
  if (raw.length === 0 || raw.length > MAX_URL_LENGTH) return undefined
  // Only printable ASCII and beyond; a control character or space is never part of a link a client drew.
  if (/[\u0000-\u0020\u007f]/.test(raw)) return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return undefined
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined
  if (url.hostname === "" || url.username !== "" || url.password !== "") return undefined
  url.hash = ""
  const normalized = url.toString()
  return normalized.length > MAX_URL_LENGTH ? undefined : normalized
}

/**
 * Where a redirect's `Location` leads from `base`, normalised, or undefined when it leads nowhere Belay fetches
 * (another scheme, a user in the URL, too long). RFC 9110 §10.2.2: a relative reference is resolved against the
 * request's URL.
 */
export const redirectTarget = (base: string, location: string): string | undefined => {
  if (location.length === 0 || location.length > MAX_URL_LENGTH) return undefined
  try {
    return normalizePreviewUrl(new URL(location.trim(), base).toString())
  } catch {
    return undefined
  }
}
