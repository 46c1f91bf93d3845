/**
 * WelcomeBurst: what a client hears once registered, as soju sends it — 001 addressed to the upstream's current
 * nick, 002–004, the upstream's ISUPPORT passed through plus `BOUNCER_NETID`, `CHATHISTORY` and `MSGREFTYPES`, no
 * MOTD, the away state, then every joined channel with JOIN, its topic and NAMES, drawn from the network actor's own
 * view (NetworkControl.view), and the channel's read marker before its RPL_ENDOFNAMES for clients with
 * draft/read-marker (as the extension requires after a JOIN). Passthrough capabilities the upstream lacks are
 * withdrawn before 001. A control connection (no network) gets an empty CHANTYPES and no channels.
 *
 * Concurrency rule: runs on the connection's session fiber only; the actor draws its view from its own fiber.
 */
import { Effect, Option } from "effect"
import { foldCase } from "../irc/CaseMapping.js"
import { applyISupport, defaultISupport } from "../irc/ISupport.js"
import type { ChannelView, NetworkEvent } from "../schema/NetworkEvent.js"
import { passthroughChange, wantsImplicitNames } from "./CapNegotiation.js"
import { isupportTokens, sendIsupport } from "./IsupportReply.js"
import { type Downstream, numeric, refreshView, replyLine, SERVER_NAME, write } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { vapidFor } from "./WebPush.js"
import { ownLine, timeTag } from "./MessageLines.js"
import { sendOwnMetadata, sendSubscribedMetadata } from "./Metadata.js"

/** The names of a NAMES reply are split so that each 353 stays well inside 512 bytes. */
const NAMES_BUDGET = 400

const VERSION = "belay-0.1"

export const welcome = (deps: ListenerDeps, d: Downstream): Effect.Effect<void> =>
  Effect.gen(function*() {
    const networkId = d.network?.id
    const upstream = networkId === undefined ? Option.none() : yield* deps.control.upstream(networkId)
    const status = networkId === undefined ? undefined : yield* deps.control.status(networkId)
    // The state it was welcomed in: a later status says whether the network connected or dropped since (LiveEvents.ts).
    if (networkId !== undefined && status !== undefined) d.lastStates.set(networkId, status.state)
    if (Option.isSome(upstream)) {
      d.nick = upstream.value.nick
      if (upstream.value.user !== null && upstream.value.host !== null) {
        d.selfSource = `${upstream.value.nick}!${upstream.value.user}@${upstream.value.host}`
      }
    }
    const tokens = Option.match(upstream, { onNone: () => [] as ReadonlyArray<string>, onSome: (u) => u.isupport })
    const isupport = applyISupport(defaultISupport, [d.nick, ...tokens])
    refreshView(d, {
      channelTypes: networkId === undefined ? "" : status?.channelTypes ?? isupport.chanTypes,
      prefixSymbols: isupport.prefix.map((p) => p.symbol).join("")
    })
    // The passthrough capabilities the upstream lacks are withdrawn before 001 (as soju does), so that a client is
    // welcomed with the capabilities it will have.
    if (Option.isSome(upstream)) {
      d.upstreamCaps = new Set(upstream.value.caps)
      const withdrawn = passthroughChange(d.caps, d.passthrough, d.upstreamCaps, d.nick)
      d.caps = withdrawn.state
      d.passthrough = withdrawn.offered
      refreshView(d)
      for (const r of withdrawn.replies) replyLine(d, r)
    }
    const account = d.signedIn?.accountName ?? d.nick
    numeric(d, "001", `Welcome to Belay, ${account}`)
    numeric(d, "002", `Your host is ${SERVER_NAME}, running ${VERSION}`)
    numeric(d, "003", "This server is a bouncer")
    numeric(d, "004", SERVER_NAME, VERSION, "aiowrsx", "beIiklmnopqrstv")
    sendIsupport(d, isupportTokens(networkId ?? null, Option.getOrUndefined(upstream), deps.filehost, vapidFor(deps, d)))
    // draft/metadata-2: the member's own metadata (none) before the MOTD's place (Metadata.ts).
    sendOwnMetadata(d)
    numeric(d, "422", "MOTD File is missing")
    if (Option.isSome(upstream) && upstream.value.away) numeric(d, "306", "You have been marked as being away")
    if (networkId === undefined) return
    const channels: Array<ChannelView> = []
    yield* deps.control.view(networkId, (events: ReadonlyArray<NetworkEvent>) => {
      for (const event of events) if (event.type === "channel" && event.joined) channels.push(event)
    })
    for (const channel of channels) yield* drawChannel(deps, d, networkId, channel, status?.caseMapping)
    yield* sendSubscribedMetadata(deps, d)
  })

const drawChannel = (
  deps: ListenerDeps,
  d: Downstream,
  networkId: number,
  channel: ChannelView,
  caseMapping: Parameters<typeof foldCase>[0] | undefined
) =>
  Effect.gen(function*() {
    const source = d.selfSource !== undefined ? d.selfSource : d.nick
    const bang = source.indexOf("!")
    const at = source.indexOf("@")
    const self = bang > 0 && at > bang
      ? { nick: source.slice(0, bang), user: source.slice(bang + 1, at), host: source.slice(at + 1) }
      : { nick: d.nick }
    const extended = d.caps.enabled.has("extended-join")
    write(d, ownLine(d.view, { source: self, command: "JOIN", params: extended ? [channel.channel, "*", d.nick] : [channel.channel] }))
    if (channel.topic.topic !== "") {
      numeric(d, "332", channel.channel, channel.topic.topic)
      if (channel.topic.setBy !== null && channel.topic.setAt !== null) {
        numeric(d, "333", channel.channel, channel.topic.setBy, String(Math.floor(Date.parse(channel.topic.setAt) / 1000)))
      }
    }
    if (!wantsImplicitNames(d.caps.enabled)) {
      // IRCv3 no-implicit-names: no NAMES after the JOIN; the read marker still follows it.
      if (caseMapping !== undefined) yield* sendMarker(deps, d, networkId, channel.channel, caseMapping)
      return
    }
    const multi = d.caps.enabled.has("multi-prefix")
    const names = channel.members.map((m) => `${multi ? m.prefix : m.prefix.slice(0, 1)}${m.nick}`)
    let chunk: Array<string> = []
    let size = 0
    for (const name of names) {
      if (size + name.length + 1 > NAMES_BUDGET && chunk.length > 0) {
        numeric(d, "353", "=", channel.channel, chunk.join(" "))
        chunk = []
        size = 0
      }
      chunk.push(name)
      size += name.length + 1
    }
    if (chunk.length > 0) numeric(d, "353", "=", channel.channel, chunk.join(" "))
    // draft/read-marker: the channel's marker follows its JOIN, before RPL_ENDOFNAMES.
    if (caseMapping !== undefined) yield* sendMarker(deps, d, networkId, channel.channel, caseMapping)
    numeric(d, "366", channel.channel, "End of /NAMES list.")
  })

/** `MARKREAD <target> timestamp=…` (or `*`) for a client with draft/read-marker; nothing for others. */
export const sendMarker = (
  deps: ListenerDeps,
  d: Downstream,
  networkId: number,
  target: string,
  caseMapping: Parameters<typeof foldCase>[0]
) =>
  Effect.gen(function*() {
    if (!d.caps.enabled.has("draft/read-marker")) return
    const marker = yield* deps.markers.get(networkId, foldCase(caseMapping, target))
    const time = Option.flatMap(marker, (m) => Option.fromNullable(m.time))
    replyLine(d, {
      command: "MARKREAD",
      params: [target, Option.match(time, { onNone: () => "*", onSome: (t) => `timestamp=${timeTag(t)}` })]
    })
  })
