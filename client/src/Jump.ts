// Jump: opening a buffer at one message — a search result or a mention — with the lines around it. When the buffer's
// loaded history holds the message, the log scrolls to it there; otherwise the log shows the window that
// `GET /api/buffers/context` answers (docs/contract.md), apart from the buffer's own messages (they stay contiguous
// for paging and unread counts), until the member goes back to the latest lines or leaves the buffer. The window
// grows a page at a time at either end as the member scrolls (`extendJump`), each page the lines around its edge.
//
// Concurrency rule: the browser's one event loop. One jump per Store (a WeakMap beside it, so the Store needs no
// field); a newer jump replaces an older one, and an answer for a replaced jump is dropped.
import { api } from "./Api.js"
import { bufferKey } from "./Casemap.js"
import { mergeById } from "./MergeById.js"
import type { MessageRecord } from "./Protocol.js"
import type { Store } from "./Store.js"

export const CONTEXT_LINES = 25

export interface JumpState {
  readonly key: string
  readonly networkId: number
  readonly target: string
  readonly messageId: number
  /** The window around the message, once answered; null while asked or when the buffer's own history holds it. */
  context: ReadonlyArray<MessageRecord> | null
  hasOlder: boolean
  hasNewer: boolean
  error: string | null
  /** A page at one end is being asked for. */
  extending: boolean
}

type ContextAnswer = { readonly messages: ReadonlyArray<MessageRecord>; readonly hasOlder: boolean; readonly hasNewer: boolean }

const askContext = (networkId: number, target: string, around: number) =>
  api<ContextAnswer>(
    "GET",
    `/api/buffers/context?${new URLSearchParams({ networkId: String(networkId), target, around: String(around), limit: String(CONTEXT_LINES) })}`
  )

const jumps = new WeakMap<Store, JumpState>()
const watching = new WeakSet<Store>()

/** The jump in progress for the buffer `key`, if any. */
export const jumpOf = (store: Store, key: string): JumpState | undefined => {
  const jump = jumps.get(store)
  return jump?.key === key ? jump : undefined
}

export const clearJump = (store: Store): void => {
  if (jumps.delete(store)) store.changed()
}

/** Opens the buffer at `messageId`, asking for its surroundings unless the loaded history holds it. */
export const jumpTo = async (store: Store, networkId: number, target: string, messageId: number): Promise<void> => {
  if (!watching.has(store)) {
    watching.add(store)
    // Leaving the buffer ends the jump: coming back shows the latest lines, as any other opening does.
    store.subscribe(() => {
      const jump = jumps.get(store)
      if (jump !== undefined && (store.view.view !== "buffer" || store.view.key !== jump.key)) jumps.delete(store)
    })
  }
  const jump: JumpState = {
    key: bufferKey(networkId, target),
    networkId,
    target,
    messageId,
    context: null,
    hasOlder: false,
    hasNewer: false,
    error: null,
    extending: false
  }
  store.openBuffer(networkId, target)
  jumps.set(store, jump)
  store.setAtBottom(false)
  store.changed()
  if (store.buffer(networkId, target)?.messages.some((m) => m.id === messageId)) return
  const answer = await askContext(networkId, target, messageId)
  if (jumps.get(store) !== jump) return
  if (answer.ok) {
    jump.context = answer.body.messages
    jump.hasOlder = answer.body.hasOlder
    jump.hasNewer = answer.body.hasNewer
  } else jump.error = answer.error
  store.changed()
}

/** One page more at the window's older or newer end (the lines around its edge); false when there is none. */
export const extendJump = async (store: Store, end: "older" | "newer"): Promise<boolean> => {
  const jump = jumps.get(store)
  const context = jump?.context
  if (jump === undefined || context == null || jump.extending || !(end === "older" ? jump.hasOlder : jump.hasNewer)) return false
  const edge = end === "older" ? context[0] : context[context.length - 1]
  if (edge === undefined) return false
  jump.extending = true
  const answer = await askContext(jump.networkId, jump.target, edge.id)
  jump.extending = false
  if (jumps.get(store) !== jump || jump.context === null) return false
  if (!answer.ok) {
    store.notify(`Could not load more lines: ${answer.error}`)
    store.changed()
    return false
  }
  jump.context = mergeById(jump.context, answer.body.messages)
  if (end === "older") jump.hasOlder = answer.body.hasOlder
  else jump.hasNewer = answer.body.hasNewer
  store.changed()
  return true
}
