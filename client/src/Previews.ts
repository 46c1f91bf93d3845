// Previews: which message gets a link preview card (docs/contract.md "Link previews"): a message or an action with a
// web link, not shown as end-to-end encrypted (its `encrypted` field: its link must not reach a third site through
// Belay), while the member's synced preference has previews on (Preferences.ts `linkPreviewsEnabled`, passed in).
// The card asks `GET /api/previews` (components/LinkPreview.tsx); its image is a same-origin path of Belay's image
// proxy, so no member's address reaches the linked site. Pure.
import { linkify, stripFormatting } from "./Linkify.js"
import type { MessageRecord } from "./Protocol.js"

/** `GET /api/previews` answer; every field but `url` may be null. */
export interface LinkPreviewData {
  readonly url: string
  readonly title: string | null
  readonly description: string | null
  readonly image: string | null
  readonly siteName: string | null
}

/** The server fetches no longer URL (docs/contract.md "Link previews"). */
export const MAX_PREVIEW_URL = 2048

/** The link a message's card previews: its first web link; undefined when the message gets no card. */
export const previewUrlOf = (m: MessageRecord, enabled: boolean): string | undefined => {
  if (!enabled || (m.kind !== "privmsg" && m.kind !== "action") || m.encrypted !== undefined) return undefined
  for (const segment of linkify(stripFormatting(m.text))) {
    if (segment.kind === "link") return segment.href.length <= MAX_PREVIEW_URL ? segment.href : undefined
  }
  return undefined
}
