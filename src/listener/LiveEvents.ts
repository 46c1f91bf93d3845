/**
 * LiveEvents: what a registered client is told as it happens (SessionHub routes each event to the sessions it
 * concerns): stored messages of its network (MessageWriter.stored, with msgid and time, and the client-only tags they
 * were sent or delivered with; echo rules below; another client's multiline message as its batch), the
 * upstream's other lines (NetworkFeed, narrowed to the client's capabilities by MessageLines.relayedLine; a stored
 * channel event with its row's msgid and time, LiveOrder.ts), read
 * markers moved anywhere (`MARKREAD`, draft/read-marker; and a channel's marker after the member's JOIN of it, before
 * its RPL_ENDOFNAMES, as the extension requires; with no-implicit-names the NAMES after that JOIN is not sent, the
 * marker still is), its own nick changing upstream, for bouncer-networks-notify the
 * account's networks added, changed, removed or changing state, and changes to the credential it signed in with
 * (CredentialCheck.ts).
 *
 * Echo rules (IRCv3 echo-message; ZNC's self-message for DMs): a message this client sent comes back to it only with
 * echo-message, with its label; a message the member sent from elsewhere (another client, the browser, an agent)
 * reaches this client always in a channel, and in a DM only with echo-message or znc.in/self-message (a client without
 * either would file `:me PRIVMSG peer` under the wrong buffer), except a DM to the member's own nick, which the server
 * delivers to the member like any other. A message already delivered (backlog, or before) is not sent twice: stored
 * ids only grow.
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Effect, Option } from "effect"
import { equalsFolded, foldCase } from "../irc/CaseMapping.js"
import { formatLine, parseLine } from "../irc/IrcLine.js"
import { MULTILINE_CAP } from "../irc/TaggedMessages.js"
import type { FeedLine } from "../services/events/NetworkFeed.js"
import type { StoredRow } from "../services/history/MessageRow.js"
import { notifyNetwork } from "./BouncerNetworks.js"
import { onCredentialEvent } from "./CredentialCheck.js"
import type { NetworkStatus } from "../schema/Network.js"
import { passthroughChange, wantsImplicitNames } from "./CapNegotiation.js"
import { type Downstream, NAMES_SKIPPED, refreshView, SERVER_NAME, write } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { ownLine, type RelayExtra, relayedLine, storedLine, timeTag } from "./MessageLines.js"
import { onPreferenceChange } from "./Metadata.js"
import { expectMultilineEcho, takeMultilineRow } from "./MultilineEcho.js"
import { closeWith } from "./Registration.js"
import type { HubEvent } from "./SessionHub.js"
import type { LabelledReply } from "./UpstreamLabels.js"
import { sendMarker } from "./WelcomeBurst.js"

const CONVERSATION: ReadonlySet<string> = new Set(["privmsg", "notice", "action"])

/** The own send this stored row is the echo of, consumed; undefined when the row is not this client's. */
const takeOwnSend = (d: Downstream, row: StoredRow): { readonly label: string | undefined } | undefined => {
  if (!row.self) return undefined
  const folded = foldCase(d.caseMapping, row.target)
  const i = d.ownSends.findIndex((s) => s.targetFolded === folded && s.remaining.startsWith(row.text))
  if (i === -1) return undefined
  const send = d.ownSends[i]!
  const label = send.label
  // A long text is stored as the pieces it was split into; the label goes with the first.
  send.label = undefined
  send.remaining = send.remaining.slice(row.text.length).trimStart()
  if (send.remaining === "") d.ownSends.splice(i, 1)
  return { label }
}

/** Whether a stored row is for this client at all (see the module comment). */
export const deliverable = (d: Downstream, row: StoredRow): boolean =>
  CONVERSATION.has(row.kind) && row.networkId === d.network?.id && row.id > d.delivered

/** A stored row to the client, under the echo rules. */
export const sendStored = (d: Downstream, row: StoredRow, batch?: string, client?: Readonly<Record<string, string>>) => {
  // A line of a multiline message this client sent with echo-message comes back within its batch (MultilineEcho.ts).
  if (batch === undefined && takeMultilineRow(d, row)) return void (d.delivered = Math.max(d.delivered, row.id))
  const own = takeOwnSend(d, row)
  const echo = d.caps.enabled.has("echo-message")
  d.delivered = Math.max(d.delivered, row.id)
  // A DM to the member's own nick is also the server delivering it to the member: that copy is for every client, the
  // sender too. It is stored once (actors/network/Persistence.isOwnDelivery), so this row is both.
  const toSelf = row.self && row.bufferKind === "dm" && equalsFolded(d.caseMapping, row.target, d.nick)
  if (own !== undefined && !echo && !toSelf) return
  if (own === undefined && row.self && row.bufferKind === "dm" && !toSelf && !echo && !d.caps.enabled.has("znc.in/self-message")) return
  const extra = {
    ...(batch !== undefined ? { batch } : {}),
    ...(d.selfSource !== undefined ? { selfSource: d.selfSource } : {}),
    ...(client !== undefined ? { client } : {})
  }
  write(d, storedLine(row, d.view, own?.label !== undefined ? { ...extra, label: own.label } : extra))
  // The sender with echo-message gets both copies a server sends of a DM to its own nick: the echo, which carries the
  // label, and the delivery, which does not (labeled-response §"Usage": only one response is the label's).
  if (own !== undefined && echo && toSelf) write(d, storedLine(row, d.view, extra))
}

/**
 * A multiline message another client of the member's sent, starting with `row`: gathered for this client as its echo
 * is (MultilineEcho.ts) when it has draft/multiline and batch and would be sent the row at all (a DM only with
 * echo-message or znc.in/self-message, or to the member's own nick); else its lines come one by one.
 */
const otherClientsMultiline = (deps: ListenerDeps, d: Downstream, row: StoredRow) => {
  // Taken by every session it awaits, this one's say-so or not, so that the memo forgets it.
  const message = row.self ? deps.clientTags.takeMultiline(row, foldCase(d.caseMapping, row.target), d.id) : undefined
  if (message === undefined || !d.caps.enabled.has("batch") || !d.caps.enabled.has(MULTILINE_CAP)) return
  const dm = row.bufferKind === "dm" && !equalsFolded(d.caseMapping, row.target, d.nick)
  if (dm && !d.caps.enabled.has("echo-message") && !d.caps.enabled.has("znc.in/self-message")) return
  expectMultilineEcho(d, { ...message, label: undefined })
}

/**
 * How this client gets a line that answers a command passed upstream under Belay's label (UpstreamLabels.ts): the
 * client that sent it with its own label (in the labeled-response batch when it has batch), or unlabelled, without
 * the batch and ACK lines, when it sent none; another client (a KICK, a user MODE reach all) without the label or
 * the batch it never saw the start of. Undefined when this client does not get it.
 */
const labelledExtra = (d: Downstream, raw: string, reply: LabelledReply): RelayExtra | undefined => {
  if (reply.session !== d.id) return { dropBatch: reply.batch !== undefined }
  const passed = d.upstreamLabels.get(reply.label)
  const clientLabel = passed?.client ?? null
  if (reply.done) d.upstreamLabels.delete(reply.label)
  const keepsBatch = clientLabel !== null && d.caps.enabled.has("batch") && d.caps.enabled.has("labeled-response")
  const command = raw.slice(raw.startsWith("@") ? raw.indexOf(" ") + 1 : 0).replace(/^:\S+ /, "").split(" ", 1)[0]
  if ((command === "BATCH" && reply.batch !== undefined) || command === "ACK") {
    if (command === "ACK" ? clientLabel === null : !keepsBatch) return undefined
  }
  return {
    ...(reply.carriesLabel && clientLabel !== null && (reply.batch === undefined || keepsBatch) ? { label: clientLabel } : {}),
    dropBatch: reply.batch !== undefined && !keepsBatch,
    answer: true,
    ...(passed?.whox !== undefined ? { whox: passed.whox } : {})
  }
}

/** The bound upstream's capabilities are now `caps`: CAP NEW / CAP DEL of the passthrough ones that changed. */
const upstreamCapsNow = (d: Downstream, caps: ReadonlySet<string>) => {
  d.upstreamCaps = caps
  const change = passthroughChange(d.caps, d.passthrough, caps, d.nick)
  d.caps = change.state
  d.passthrough = change.offered
  refreshView(d)
  for (const r of change.replies) write(d, ownLine(d.view, { source: { nick: SERVER_NAME }, ...r }))
}

/**
 * The upstream's own CAP ACK or DEL (cap-notify upstream, or a reconnect's negotiation): what it has enabled now.
 * False when the line is no CAP line after all (its text only contains the word).
 */
const onUpstreamCap = (d: Downstream, raw: string): boolean => {
  const line = parseLine(raw)
  if (line?.command !== "CAP") return false
  const sub = (line.params[1] ?? "").toUpperCase()
  if (sub !== "ACK" && sub !== "DEL") return true
  const caps = new Set(d.upstreamCaps ?? [])
  for (const word of (line.params.at(-1) ?? "").split(" ")) {
    const name = word.replace(/^-/, "").split("=")[0]!
    if (name === "") continue
    if (sub === "ACK" && !word.startsWith("-")) caps.add(name)
    else caps.delete(name)
  }
  upstreamCapsNow(d, caps)
  return true
}

const onLine = (deps: ListenerDeps, d: Downstream, networkId: number, feed: FeedLine, reply: LabelledReply | undefined) =>
  Effect.gen(function*() {
    const raw = feed.line
    if (reply === undefined && raw.includes(" CAP ") && onUpstreamCap(d, raw)) return
    const extra = reply === undefined ? {} : labelledExtra(d, raw, reply)
    if (extra === undefined) return
    // A stored channel event goes with its row's msgid and time (LiveOrder.ts), as CHATHISTORY shows it.
    const line = relayedLine(raw, feed.time, d.view, feed.stamp === undefined ? extra : { ...extra, stamp: feed.stamp })
    if (line === undefined) return
    const implicitNames = wantsImplicitNames(d.caps.enabled)
    const parsed = raw.includes(" NICK ") || raw.includes(" JOIN ") || raw.includes(" 366 ") ||
        (!implicitNames && raw.includes(" 353 "))
      ? parseLine(raw)
      : undefined
    const from = parsed?.source?.nick
    const first = parsed?.params[0]
    // IRCv3 no-implicit-names: the NAMES reply that follows the member's own JOIN is not this client's, unless it
    // answers this client's own NAMES (labelled); the read marker still goes where RPL_ENDOFNAMES would have been.
    const namesOf = parsed?.command === "353" ? parsed.params[2] : parsed?.command === "366" ? parsed.params[1] : undefined
    if (!implicitNames && extra.answer !== true && namesOf !== undefined && d.namesSkipped.has(foldCase(d.caseMapping, namesOf))) {
      if (parsed?.command === "366") {
        d.namesSkipped.delete(foldCase(d.caseMapping, namesOf))
        if (d.joinsAwaitingMarker.delete(foldCase(d.caseMapping, namesOf))) yield* sendMarker(deps, d, networkId, namesOf, d.caseMapping)
      }
      return
    }
    // draft/read-marker: after the member's own JOIN, the channel's marker comes before its RPL_ENDOFNAMES.
    if (parsed?.command === "366" && parsed.params[1] !== undefined && d.joinsAwaitingMarker.delete(foldCase(d.caseMapping, parsed.params[1]))) {
      yield* sendMarker(deps, d, networkId, parsed.params[1], d.caseMapping)
    }
    write(d, line)
    if (parsed?.command === "JOIN" && from !== undefined && first !== undefined && equalsFolded(d.caseMapping, from, d.nick) &&
      d.caps.enabled.has("draft/read-marker")) {
      d.joinsAwaitingMarker.add(foldCase(d.caseMapping, first))
    }
    if (parsed?.command === "JOIN" && from !== undefined && first !== undefined && equalsFolded(d.caseMapping, from, d.nick) &&
      !implicitNames) {
      if (d.namesSkipped.size >= NAMES_SKIPPED) d.namesSkipped.delete(d.namesSkipped.values().next().value!)
      d.namesSkipped.add(foldCase(d.caseMapping, first))
    }
    // The member's own nick change: what the client now calls itself.
    if (parsed?.command === "NICK" && from !== undefined && first !== undefined && equalsFolded(d.caseMapping, from, d.nick)) {
      d.nick = first
      if (d.selfSource !== undefined) d.selfSource = first + d.selfSource.slice(d.selfSource.search(/[!@]|$/))
      refreshView(d)
    }
  })

/**
 * The bound network connected or lost its connection. Connected again: its capabilities are read again (CAP NEW/DEL);
 * the channels come back as the server sends them — its JOIN, topic and NAMES for each channel reach the client from
 * the feed, as soju forwards them — and a changed nick as NICK (below). A client without bouncer-networks is told in a
 * NOTICE either way, as soju does.
 */
const boundNetworkMoved = (
  deps: ListenerDeps,
  d: Downstream,
  network: { readonly id: number; readonly name: string },
  status: NetworkStatus,
  previous: string | undefined
) =>
  Effect.gen(function*() {
    const notice = (text: string) => {
      if (!d.caps.enabled.has("soju.im/bouncer-networks")) {
        write(d, ownLine(d.view, { source: { nick: SERVER_NAME }, command: "NOTICE", params: [d.nick, text] }))
      }
    }
    if (status.state === "connected") {
      const upstream = yield* deps.control.upstream(network.id)
      if (Option.isSome(upstream)) upstreamCapsNow(d, new Set(upstream.value.caps))
      notice(`Connected to ${network.name}`)
    } else if (previous === "connected") {
      notice(`Disconnected from ${network.name}${status.lastError !== null ? `: ${status.lastError}` : ""}`)
    }
  })

export const onHubEvent = (deps: ListenerDeps, d: Downstream, event: HubEvent) =>
  Effect.gen(function*() {
    const network = d.network
    switch (event._tag) {
      case "Stored":
        for (const row of event.rows) {
          if (!deliverable(d, row)) continue
          otherClientsMultiline(deps, d, row)
          // The member's own client tags as their client sent them (ClientTagMemo.ts), else the upstream's.
          sendStored(d, row, undefined, deps.clientTags.tagsOf(row, foldCase(d.caseMapping, row.target)) ?? row.clientTags)
        }
        return
      case "Line":
        if (event.line.networkId === network?.id) yield* onLine(deps, d, network.id, event.line, event.reply)
        return
      case "Marker": {
        const { marker } = event
        if (marker.networkId !== network?.id || !d.caps.enabled.has("draft/read-marker")) return
        const time = yield* deps.history.timeOf(marker.networkId, marker.messageId)
        if (Option.isNone(time)) return
        write(d, formatLine({ command: "MARKREAD", params: [marker.target, `timestamp=${timeTag(time.value)}`] }))
        return
      }
      case "Status": {
        const { status } = event.status
        const previous = d.lastStates.get(status.networkId)
        if (network !== undefined && status.networkId === network.id && previous !== status.state) {
          yield* boundNetworkMoved(deps, d, network, status, previous)
        }
        if (status.networkId === network?.id) {
          d.caseMapping = status.caseMapping
          if (status.nick !== null && !equalsFolded(d.caseMapping, status.nick, d.nick)) {
            write(d, formatLine({ source: { nick: d.nick }, command: "NICK", params: [status.nick] }))
            d.nick = status.nick
            refreshView(d)
          }
        }
        if (d.lastStates.get(status.networkId) !== status.state) {
          d.lastStates.set(status.networkId, status.state)
          yield* notifyNetwork(deps, d, status.networkId, event.status.accountId)
        }
        return
      }
      case "Credential":
        return yield* onCredentialEvent(deps, d, event.event)
      case "Preference":
        return onPreferenceChange(d, event.change)
      case "NetworkChange": {
        const { change } = event
        yield* notifyNetwork(deps, d, change.networkId, event.accountId)
        if (change._tag === "Removed" && change.networkId === network?.id) closeWith(d, "This network was removed")
        return
      }
    }
  })
