/**
 * BrowserEvents is the port through which changes are pushed to the member's own open
 * browser tabs (interface "Events" 2–3): nick notes, relay-bot marks, and OAuth token
 * revocations (which close the WebSocket opened with that token, code 4001).
 * The browser WebSocket subscribes per account; with no tab open an event is simply
 * dropped (a PubSub with no subscriber), which is the intended semantics: tabs
 * re-read state when they connect.
 */
import { Effect, PubSub, Stream } from "effect"

export type BrowserEvent =
  | { readonly _tag: "NickNoteChanged"; readonly accountId: number; readonly networkId: number; readonly nick: string; readonly note: string }
  | {
    readonly _tag: "RelayBotChanged"
    readonly accountId: number
    readonly networkId: number
    readonly nick: string
    readonly marked: boolean
    readonly pattern: string | null
  }
  | { readonly _tag: "TokenRevoked"; readonly accountId: number; readonly oauthTokenId: number }

export class BrowserEvents extends Effect.Service<BrowserEvents>()("belay/BrowserEvents", {
  scoped: Effect.gen(function*() {
    const hub = yield* PubSub.sliding<BrowserEvent>(1024)
    const publish = (event: BrowserEvent) => PubSub.publish(hub, event).pipe(Effect.asVoid)
    /** Events of one account, from the moment of subscription. */
    const subscribe = (accountId: number) =>
      Stream.fromPubSub(hub).pipe(Stream.filter((e) => e.accountId === accountId))
    return { publish, subscribe, hub } as const
  })
}) {}
