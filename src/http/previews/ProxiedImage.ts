/**
 * ProxiedImage owns the address at which a member's browser loads a remote image from Belay (docs/contract.md "Link
 * previews"): `/api/previews/image?url=<the image's URL>&sig=<ImageProxy.signature>`. The preview route and the
 * approval page (an app's logo) build it here, PreviewRoutes serves it. Pure.
 */
import type { ImageProxy } from "../../services/previews/ImageProxy.js"

export const PreviewPaths = {
  previews: "/api/previews",
  image: "/api/previews/image"
} as const

/** The same-origin path that serves the image at `url` through the proxy, signed. */
export const proxiedImagePath = (proxy: Pick<ImageProxy, "signature">, url: string): string =>
  `${PreviewPaths.image}?${new URLSearchParams({ url, sig: proxy.signature(url) }).toString()}`
