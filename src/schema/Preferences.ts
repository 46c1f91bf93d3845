/**
 * Preferences: the words of what a member chooses for a buffer and for the web client (docs/contract.md
 * "Preferences"), shared by the service that keeps them, the REST routes, the IRC listener's draft/metadata-2 keys
 * and the web client (which imports these types only). Pure; no state.
 *
 * A buffer's choice: pinned (shown first), muted (dimmed, only highlights counted, no notification), detached (stays
 * joined and stored, out of the sidebar until a highlight), and the notification level: `all` (every message of the
 * buffer notifies), `highlights` (the default: a message naming the member's nick, and every message of a direct
 * conversation, which is addressed to the member), `none`.
 *
 * The client document: one small JSON object per account — `theme` and `linkPreviews`, and room for a few keys more
 * (CLIENT_EXTRA_KEYS of CLIENT_EXTRA_VALUE characters each), bounded as a whole by CLIENT_DOCUMENT_BYTES.
 */
import { Schema } from "effect"

export const NOTIFY_LEVELS = ["all", "highlights", "none"] as const
export const NotifyLevel = Schema.Literal(...NOTIFY_LEVELS)
export type NotifyLevel = typeof NotifyLevel.Type

/** What a buffer is when the member chose nothing for it. */
export const DEFAULT_NOTIFY: NotifyLevel = "highlights"

export interface BufferChoice {
  readonly pinned: boolean
  readonly muted: boolean
  readonly detached: boolean
  readonly notify: NotifyLevel
}

export const DEFAULT_CHOICE: BufferChoice = { pinned: false, muted: false, detached: false, notify: DEFAULT_NOTIFY }

/** Whether a choice differs from the default (only those are stored: one row per buffer with a non-default choice). */
export const isDefaultChoice = (c: BufferChoice): boolean =>
  !c.pinned && !c.muted && !c.detached && c.notify === DEFAULT_NOTIFY

/** `PUT /api/buffers/{network}/{target}/preferences`: any subset of the four; what is left out stays as it is. */
export const BufferChoicePatch = Schema.Struct({
  pinned: Schema.optional(Schema.Boolean),
  muted: Schema.optional(Schema.Boolean),
  detached: Schema.optional(Schema.Boolean),
  notify: Schema.optional(NotifyLevel)
})
export type BufferChoicePatch = typeof BufferChoicePatch.Type

/** A buffer's choice as the REST answer, the socket's `buffer-preference` frame and the export give it. */
export interface BufferPreference extends BufferChoice {
  readonly networkId: number
  readonly target: string
}

export const THEMES = ["light", "dark", "system"] as const
export const Theme = Schema.Literal(...THEMES)
export type Theme = typeof Theme.Type

/** Keys of the client document beyond the known ones: a few, short, for settings a later client adds. */
export const CLIENT_EXTRA_KEYS = 16
export const CLIENT_EXTRA_VALUE = 256
/** The stored document as JSON, at most this many bytes. */
export const CLIENT_DOCUMENT_BYTES = 4096

const EXTRA_KEY = /^[a-z][A-Za-z0-9]{0,31}$/

/**
 * What a stored text cannot hold: NUL and half of a surrogate pair (not a character, so no UTF-8 encodes it;
 * PostgreSQL's jsonb refuses both).
 */
export const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** A value of an extra key: a boolean, a finite number, a short string, or null. */
const ExtraValue = Schema.Union(
  Schema.Boolean,
  Schema.Number.pipe(Schema.finite()),
  Schema.String.pipe(Schema.maxLength(CLIENT_EXTRA_VALUE)),
  Schema.Null
)

/** The web client's settings that follow the member from browser to browser. */
export interface ClientDocument {
  readonly theme: Theme
  readonly linkPreviews: boolean
  readonly [key: string]: boolean | number | string | null
}

export const DEFAULT_CLIENT_DOCUMENT: ClientDocument = { theme: "system", linkPreviews: true }

const ClientDocumentInput = Schema.Struct(
  { theme: Schema.optional(Theme), linkPreviews: Schema.optional(Schema.Boolean) },
  Schema.Record({ key: Schema.String, value: ExtraValue })
)
const decodeInput = Schema.decodeUnknownEither(ClientDocumentInput, { errors: "first", onExcessProperty: "preserve" })

/**
 * `PUT /api/preferences/client` body, merged over the stored document: the known keys checked by their type, other
 * keys allowed up to CLIENT_EXTRA_KEYS (a lower-camel name of at most 32 characters, a short value; null removes one).
 * The result must fit CLIENT_DOCUMENT_BYTES. The reason of a refusal, or the merged document.
 */
export const mergeClientDocument = (
  stored: ClientDocument,
  patch: unknown
): { readonly ok: true; readonly document: ClientDocument } | { readonly ok: false; readonly reason: string } => {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return { ok: false, reason: "send a JSON object" }
  const decoded = decodeInput(patch)
  if (decoded._tag === "Left") {
    return { ok: false, reason: "theme must be light, dark or system; linkPreviews a boolean; other values a boolean, number, string of at most 256 characters, or null" }
  }
  const input = decoded.right
  const extras: Record<string, boolean | number | string | null> = {}
  for (const [key, value] of Object.entries(stored)) if (key !== "theme" && key !== "linkPreviews") extras[key] = value
  for (const [key, value] of Object.entries(input)) {
    if (key === "theme" || key === "linkPreviews") continue
    if (!EXTRA_KEY.test(key)) return { ok: false, reason: `${JSON.stringify(key.slice(0, 40))} is not a setting name (a lower-camel word of at most 32 characters)` }
    if (typeof value === "string" && UNSTORABLE.test(value)) return { ok: false, reason: `${key} holds a character that is not text` }
    if (value === null || value === undefined) delete extras[key]
    else extras[key] = value
  }
  if (Object.keys(extras).length > CLIENT_EXTRA_KEYS) return { ok: false, reason: `at most ${CLIENT_EXTRA_KEYS} settings beyond theme and linkPreviews` }
  const document: ClientDocument = { theme: input.theme ?? stored.theme, linkPreviews: input.linkPreviews ?? stored.linkPreviews, ...extras }
  if (new TextEncoder().encode(JSON.stringify(document)).length > CLIENT_DOCUMENT_BYTES) {
    return { ok: false, reason: `the settings must fit ${CLIENT_DOCUMENT_BYTES} bytes as JSON` }
  }
  return { ok: true, document }
}

/** A stored document read back: whatever is not valid now (a setting dropped by a later release) is left out. */
export const readClientDocument = (stored: unknown): ClientDocument => {
  const merged = mergeClientDocument(DEFAULT_CLIENT_DOCUMENT, stored)
  return merged.ok ? merged.document : DEFAULT_CLIENT_DOCUMENT
}
