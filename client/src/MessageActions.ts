// MessageActions: what the member does to a message, and the typing notices, as the socket's own frames
// (docs/contract.md "The member's browser surface", WebSocket): `react` and `reply` (client tags the upstream carries
// only with message-tags), `redact` (draft/message-redaction) and `typing`. The server answers each with `result` or
// an `error` naming what was refused (the upstream lacks the capability, the target is not the member's); a failure is
// shown as a notice and changes nothing here. The message's effect comes back as usual: a stored `react` row, the
// reply's echo, a `redaction` frame. `typing` goes without an id: a notice lost is not worth telling the member about.
//
// Concurrency rule: the browser's one event loop; each call is one frame.
import type { Buffer } from "./Buffer.js"
import type { MessageRecord, TypingState } from "./Protocol.js"
import type { Store } from "./Store.js"

/** The reactions offered on every message: a small fixed set, as Goguma and Halloy offer. Label: its name. */
export const QUICK_REACTIONS: ReadonlyArray<readonly [string, string]> = [
  ["👍", "thumbs up"],
  ["❤️", "heart"],
  ["😂", "laughing"],
  ["😮", "surprised"],
  ["😢", "sad"],
  ["🎉", "celebrate"]
]

const send = async (store: Store, frame: Readonly<Record<string, unknown>>, what: string): Promise<boolean> => {
  try {
    await store.connection.request(frame)
    return true
  } catch (error) {
    store.notify(`Could not ${what}: ${(error as Error).message}`)
    return false
  }
}

export const react = (store: Store, buffer: Buffer, message: MessageRecord, reaction: string): Promise<boolean> =>
  message.msgid === undefined ? Promise.resolve(false) : send(
    store,
    { type: "react", networkId: buffer.networkId, target: buffer.target, msgid: message.msgid, reaction },
    "react"
  )

export const reply = (store: Store, buffer: Buffer, msgid: string, text: string): Promise<boolean> =>
  send(store, { type: "reply", networkId: buffer.networkId, target: buffer.target, msgid, text }, "send the reply")

export const redact = (store: Store, buffer: Buffer, message: MessageRecord): Promise<boolean> =>
  message.msgid === undefined ? Promise.resolve(false) : send(
    store,
    { type: "redact", networkId: buffer.networkId, target: buffer.target, msgid: message.msgid },
    "delete the message"
  )

export const sendTyping = (store: Store, buffer: Buffer, state: TypingState): void => {
  store.connection.send({ type: "typing", networkId: buffer.networkId, target: buffer.target, state })
}
