/**
 * ClientCommands: what a registered IRC client sends, and where it goes (docs/architecture.md "The path of a client's
 * PRIVMSG"). Everything that reaches the upstream goes through the same port as MCP and the browser
 * (NetworkControl): PRIVMSG, NOTICE and CTCP ACTION through `say` (flood control, splitting, storage, end-to-end
 * encryption); JOIN, PART, NICK, AWAY, TOPIC, channel MODE changes (ModeRequest.ts) and WHOIS through their commands;
 * anything else through `raw`, behind
 * its end-to-end guard, under a label of Belay's when the upstream has labeled-response, so that the answer comes
 * back to this client alone with its own label (UpstreamLabels.ts; WHOIS then goes this way too, and so does a
 * labelled JOIN without keys, PART, NICK, TOPIC or MODE: PASSED_WHEN_LABELLED). A read-only sign-in (read token, paused account) gets `FAIL <command> READ_ONLY` for every
 * write. Answered here without the upstream: CAP, PING, QUIT, CHATHISTORY, BOUNCER, MARKREAD, ISUPPORT, SEARCH, WEBPUSH, METADATA
 * (with draft/metadata-2), and
 * `AWAY *` under draft/pre-away.
 *
 * IRCv3 tags (docs/decisions/irc-listener.md "Client tags, REDACT and multiline upstream"): a PRIVMSG or NOTICE with
 * client-only tags goes as raw lines that carry them (split as `say` splits, TaggedMessages.ts) when the upstream has
 * message-tags, else through `say` without them, and the member's clients get them with the stored message
 * (ClientTagMemo.ts); TAGMSG only to an upstream with message-tags, which Belay relays to the member's other clients
 * (and echoes) unless that upstream echoes it; REDACT only to one with
 * draft/message-redaction (else FAIL REDACT INVALID_TARGET), SETNAME only to one with setname (else FAIL SETNAME
 * CANNOT_CHANGE_REALNAME); draft/multiline batches are collected by Multiline.ts.
 *
 * Echoes (IRCv3 echo-message, as soju): a PRIVMSG or NOTICE a client sends is stored once (by the actor: from the
 * upstream's echo, or as sent) and comes back on MessageWriter.stored; the sender sees it only with echo-message (with
 * its label), which `ownSends` remembers until it comes. Other clients always see it (LiveEvents.ts).
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Clock, Effect, Option } from "effect"
import type { SayKind, UpstreamView } from "../actors/NetworkApi.js"
import { foldCase } from "../irc/CaseMapping.js"
import { formatLine, type IrcLine, parsePrefix } from "../irc/IrcLine.js"
import { applyISupport, defaultISupport, isChannel } from "../irc/ISupport.js"
import { CLIENT_TAGS_MAX_BYTES, clientOnlyTags, messageLines, tagBytes } from "../irc/TaggedMessages.js"
import { prefixAllowance } from "../irc/TextSplit.js"
import { onBouncer } from "./BouncerNetworks.js"
import { METADATA_CAP, offeredCaps, onCap } from "./CapNegotiation.js"
import { onChatHistory } from "./ChatHistory.js"
import { type Downstream, fail, numeric, OWN_SENDS, refreshView, reply, replyLine, SERVER_NAME, UPSTREAM_LABELS } from "./Downstream.js"
import { timeTag, whoxRequest } from "./MessageLines.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { isupportNow } from "./IsupportReply.js"
import { onMarkRead } from "./MarkRead.js"
import { onMetadata } from "./Metadata.js"
import { parseModeChanges } from "./ModeRequest.js"
import { onMultiline } from "./Multiline.js"
import { closeWith } from "./Registration.js"
import { onSearch } from "./Search.js"
import { onWebPush } from "./WebPush.js"

/** A tool failure of the port as an IRCv3 standard reply code: its tag in upper snake case. */
const codeOf = (tag: string) => tag.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase()

const failWith = (d: Downstream, command: string, context: ReadonlyArray<string>) => (error: { readonly _tag: string }) =>
  Effect.sync(() => {
    const message = "message" in error && typeof error.message === "string" && error.message !== "" ? error.message : error._tag
    fail(d, command, codeOf(error._tag), context, message)
  })

/** Runs a write through the port, its failure answered with FAIL. */
const run = <E extends { readonly _tag: string }>(
  d: Downstream,
  command: string,
  context: ReadonlyArray<string>,
  write: Effect.Effect<unknown, E>
) => Effect.asVoid(Effect.catchAll(write, failWith(d, command, context)))

const CTCP_ACTION = /^\u0001ACTION(?: (.*?))?\u0001?$/s

/** Remembers a send whose stored echo is this client's own (see the module comment). */
const expectEcho = (d: Downstream, target: string, text: string, label: string | undefined, caseMapping: Parameters<typeof foldCase>[0]) => {
  if (d.ownSends.length >= OWN_SENDS) d.ownSends.shift()
  d.ownSends.push({ targetFolded: foldCase(caseMapping, target), remaining: text, label })
}

/**
 * The client-only tags (`+draft/reply`…) a line may take upstream: those it carries when the upstream has message-tags,
 * else none (they are dropped: the upstream would not relay them). None as well when they are too long (message-tags
 * §"Size limit"), with 417 ERR_INPUTTOOLONG, and undefined then: nothing is sent.
 */
const upstreamTags = (d: Downstream, line: IrcLine, upstream: Option.Option<UpstreamView>) => {
  const tags = clientOnlyTags(line.tags)
  if (tags.size === 0) return tags
  if (tagBytes(tags) > CLIENT_TAGS_MAX_BYTES) {
    numeric(d, "417", "Input line was too long")
    return undefined
  }
  return Option.isSome(upstream) && upstream.value.caps.includes("message-tags") ? tags : new Map<string, string>()
}

/** What the upstream relays before our text (`:nick!user@host `), as far as Belay knows it: the split leaves room. */
const ownPrefix = (u: UpstreamView) =>
  prefixAllowance({ nick: u.nick, ...(u.user !== null ? { user: u.user } : {}), ...(u.host !== null ? { host: u.host } : {}) })

const message = (deps: ListenerDeps, d: Downstream, networkId: number, line: IrcLine, label: string | undefined) =>
  Effect.gen(function*() {
    const [targets, text] = line.params
    // An empty text is no text (RFC 2812 §3.3.1: ERR_NOTEXTTOSEND), not a tool failure.
    if (targets === undefined || text === undefined || text === "") {
      return numeric(d, targets === undefined ? "411" : "412", "No recipient or text")
    }
    const status = yield* deps.control.status(networkId)
    const upstream = yield* deps.control.upstream(networkId)
    const tags = upstreamTags(d, line, upstream)
    if (tags === undefined) return
    for (const target of targets.split(",").filter((t) => t !== "")) {
      const action = line.command === "PRIVMSG" ? CTCP_ACTION.exec(text) : null
      if (action === null && text.startsWith("\u0001")) {
        // Other CTCP (VERSION, PING, replies) is not history: it goes out as written, behind the raw guard.
        yield* run(d, line.command, [target], deps.control.raw(networkId, formatLine({ command: line.command, params: [target, text] })))
        continue
      }
      const kind: SayKind = action !== null ? "action" : line.command === "NOTICE" ? "notice" : "privmsg"
      const body = action !== null ? (action[1] ?? "") : text
      expectEcho(d, target, body, label, status.caseMapping)
      // With client tags (and an upstream that has message-tags), the pieces go as raw lines that carry them, split as
      // `say` splits; an end-to-end encrypted target takes `say` (encrypted), without them.
      const tagged = tags.size > 0 && Option.isSome(upstream) && body !== "" &&
          !(yield* deps.control.isEncrypted(networkId, target))
        ? messageLines(line.command === "NOTICE" ? "NOTICE" : "PRIVMSG", target, body, {
          tags,
          action: action !== null,
          prefixAllowance: ownPrefix(upstream.value)
        })
        : undefined
      const sent = yield* Effect.either(
        tagged !== undefined ? deps.control.rawLines(networkId, tagged) : deps.control.say(networkId, kind, target, body)
      )
      if (sent._tag === "Left") {
        d.ownSends.pop()
        yield* failWith(d, line.command, [target])(sent.left)
      } else {
        // The member's clients with message-tags get its client tags with the stored message (ClientTagMemo.ts).
        deps.clientTags.remember(networkId, foldCase(status.caseMapping, target), body, clientOnlyTags(line.tags))
      }
    }
  })

/**
 * A TAGMSG the member sent, to its other clients on the network (those with message-tags: MessageLines.relayedLine)
 * and, with echo-message, back to the sender as the answer to its label.
 */
const relayTagmsg = (deps: ListenerDeps, d: Downstream, networkId: number, target: string, tags: ReadonlyMap<string, string>) =>
  Effect.gen(function*() {
    const time = yield* Clock.currentTimeMillis
    const line = formatLine({ tags, source: parsePrefix(d.selfSource ?? d.nick), command: "TAGMSG", params: [target] })
    const accountId = d.signedIn?.accountId ?? 0
    for (const s of deps.hub.ofNetwork(networkId)) {
      if (s.id !== d.id) s.offer({ _tag: "Line", line: { accountId, networkId, line, time } })
    }
    if (!d.caps.enabled.has("echo-message")) return
    const echo = new Map(tags)
    if (d.caps.enabled.has("server-time")) echo.set("time", timeTag(time))
    reply(d, formatLine({ tags: echo, source: parsePrefix(d.selfSource ?? d.nick), command: "TAGMSG", params: [target] }))
  })

const splitList = (s: string | undefined) => (s === undefined ? [] : s.split(",").filter((x) => x !== ""))

/** A command for the upstream, from a client that may write. */
const upstreamCommand = (deps: ListenerDeps, d: Downstream, networkId: number, line: IrcLine, label: string | undefined) =>
  Effect.gen(function*() {
    const p = line.params
    const c = deps.control
    // A labelled command whose upstream answers labels goes as written under Belay's label, so that the upstream's
    // own answer (a JOIN with its topic and NAMES, a 482) is the labelled response (labeled-response §"Response").
    const portJoin = line.command === "JOIN" && (p[1] !== undefined || p[0] === "0")
    if (label !== undefined && PASSED_WHEN_LABELLED.has(line.command) && !portJoin && (yield* labelsUpstream(deps, networkId))) {
      return yield* passUpstream(deps, d, networkId, line, label)
    }
    switch (line.command) {
      case "PRIVMSG":
      case "NOTICE":
        return yield* message(deps, d, networkId, line, label)
      case "JOIN": {
        if (p[0] === "0") return fail(d, "JOIN", "INVALID_PARAMS", ["0"], "Leaving every channel is not supported")
        const keys = splitList(p[1])
        yield* Effect.forEach(splitList(p[0]), (channel, i) =>
          run(d, "JOIN", [channel], c.join(networkId, channel, Option.fromNullable(keys[i]))), { discard: true })
        return
      }
      case "PART":
        return yield* Effect.forEach(splitList(p[0]), (channel) =>
          run(d, "PART", [channel], c.part(networkId, channel, Option.fromNullable(p[1]))), { discard: true })
      case "NICK":
        if (p[0] === undefined) return numeric(d, "431", "No nickname given")
        return yield* run(d, "NICK", [p[0]], c.nick(networkId, p[0]))
      case "AWAY":
        return yield* run(d, "AWAY", [], c.away(networkId, p[0] === undefined || p[0] === "" ? Option.none() : Option.some(p[0])))
      case "TOPIC":
        if (p[0] !== undefined && p[1] !== undefined) return yield* run(d, "TOPIC", [p[0]], c.setTopic(networkId, p[0], p[1]))
        break
      case "MODE": {
        // Channel mode changes through setModes (validated against CHANMODES/PREFIX, packed under MODES); queries,
        // user modes and anything setModes cannot carry go to the upstream as written.
        const [target, modes, ...args] = p
        const upstream = yield* c.upstream(networkId)
        if (target === undefined || modes === undefined || Option.isNone(upstream)) break
        const isupport = applyISupport(defaultISupport, [d.nick, ...upstream.value.isupport])
        if (!isChannel(isupport, target)) break
        const changes = parseModeChanges(isupport, modes, args)
        if (changes === undefined) break
        return yield* run(d, "MODE", [target], c.setModes(networkId, target, changes))
      }
      case "WHOIS":
        // Through whois unless the answer can come back to this client alone (labeled-response upstream, below).
        if (p.length === 1 && p[0] !== undefined && !p[0].includes(",") && !(yield* labelsUpstream(deps, networkId))) {
          return yield* run(d, "WHOIS", [p[0]], c.whois(networkId, p[0]))
        }
        break
      case "TAGMSG": {
        // Client-only tags travel only to an upstream that understands them; without message-tags (or without a
        // client tag) there is nothing to send, and nothing is.
        if (p[0] === undefined) return numeric(d, "411", "No recipient given (TAGMSG)")
        const upstream = yield* c.upstream(networkId)
        const tags = upstreamTags(d, line, upstream)
        if (tags === undefined || tags.size === 0) return
        // An upstream with echo-message sends it back to every client (with our label to the sender, when it
        // answers labels); without, Belay relays it to the member's clients itself (message-tags §"Client-only tags").
        if (Option.isSome(upstream) && upstream.value.caps.includes("echo-message")) {
          if (label !== undefined && upstream.value.caps.includes("labeled-response")) {
            return yield* passUpstream(deps, d, networkId, line, label, tags)
          }
          return yield* run(d, "TAGMSG", [p[0]], c.raw(networkId, formatLine({ tags, command: "TAGMSG", params: [p[0]] })))
        }
        const sent = yield* Effect.either(c.raw(networkId, formatLine({ tags, command: "TAGMSG", params: [p[0]] })))
        if (sent._tag === "Left") return yield* failWith(d, "TAGMSG", [p[0]])(sent.left)
        return yield* relayTagmsg(deps, d, networkId, p[0], tags)
      }
      case "REDACT": {
        // IRCv3 draft/message-redaction: the upstream decides (and answers FAIL REDACT itself); without the
        // capability upstream nothing can be redacted there.
        if (p[0] === undefined || p[1] === undefined) return numeric(d, "461", "REDACT :Not enough parameters")
        const upstream = yield* c.upstream(networkId)
        if (Option.isNone(upstream) || !upstream.value.caps.includes("draft/message-redaction")) {
          return fail(d, "REDACT", "INVALID_TARGET", [p[0]], "This network's server cannot redact messages")
        }
        break
      }
      case "SETNAME": {
        // IRCv3 setname: the upstream changes the real name and echoes SETNAME to the member's clients (MessageLines
        // relays it to those with the capability); without the capability upstream it cannot be changed.
        if (p[0] === undefined || p[0] === "") return numeric(d, "461", "SETNAME :Not enough parameters")
        const upstream = yield* c.upstream(networkId)
        if (Option.isNone(upstream) || !upstream.value.caps.includes("setname")) {
          return fail(d, "SETNAME", "CANNOT_CHANGE_REALNAME", [], "This network's server cannot change the real name")
        }
        break
      }
    }
    // MODE queries, WHO, LIST, MONITOR, INVITE, KICK…: verbatim (without the client's tags), behind the raw guard,
    // under a label of Belay's when the upstream answers labels (UpstreamLabels.ts).
    return yield* passUpstream(deps, d, networkId, line, label)
  })

/**
 * Commands that go through the port unlabelled (their state is the actor's: it reduces their echo all the same) but
 * as written under Belay's label when the client labels them and the upstream answers labels (see upstreamCommand).
 * A JOIN with keys stays on the port, which remembers the key for rejoin; AWAY too, which the actor keeps.
 */
const PASSED_WHEN_LABELLED: ReadonlySet<string> = new Set(["JOIN", "PART", "NICK", "TOPIC", "MODE"])

/**
 * A line as the client wrote it (its client-only `tags` kept, nothing else of its tags), behind the raw guard, under
 * a label of Belay's when the upstream answers labels; a JOIN's answer (topic, NAMES) is for every client.
 */
const passUpstream = (
  deps: ListenerDeps,
  d: Downstream,
  networkId: number,
  line: IrcLine,
  label: string | undefined,
  clientTags: ReadonlyMap<string, string> = new Map()
) =>
  Effect.gen(function*() {
    const ours = (yield* labelsUpstream(deps, networkId)) ? deps.labels.mint(d.id, line.command === "JOIN") : undefined
    if (ours !== undefined) {
      if (d.upstreamLabels.size >= UPSTREAM_LABELS) d.upstreamLabels.delete(d.upstreamLabels.keys().next().value!)
      const whox = line.command === "WHO" ? whoxRequest(line.params) : undefined
      d.upstreamLabels.set(ours, { client: label ?? null, ...(whox !== undefined ? { whox } : {}) })
    }
    const tags = new Map(clientTags)
    if (ours !== undefined) tags.set("label", ours)
    const sent = yield* Effect.either(deps.control.raw(networkId, formatLine({ tags, command: line.command, params: line.params })))
    if (sent._tag === "Left") {
      if (ours !== undefined) d.upstreamLabels.delete(ours)
      return yield* failWith(d, line.command, line.command === "JOIN" ? line.params.slice(0, 1) : [])(sent.left)
    }
    if (ours !== undefined && label !== undefined) d.labelPassed = true
  })

/** Whether the network's upstream connection enabled labeled-response. */
const labelsUpstream = (deps: ListenerDeps, networkId: number) =>
  Effect.map(deps.control.upstream(networkId), (u) => Option.isSome(u) && u.value.caps.includes("labeled-response"))

/** Commands a client may send whatever it may write; true when the command was one of them. */
const local = (deps: ListenerDeps, d: Downstream, line: IrcLine) =>
  Effect.gen(function*() {
    const p = line.params
    switch (line.command) {
      case "CAP": {
        const upstream = d.network === undefined ? Option.none() : yield* deps.control.upstream(d.network.id)
        const offered = offeredCaps(Option.match(upstream, { onNone: () => undefined, onSome: (u) => new Set(u.caps) }))
        const outcome = onCap(d.caps, p, { nick: d.nick, registered: true, offered })
        d.caps = outcome.state
        refreshView(d)
        for (const r of outcome.replies) replyLine(d, r)
        return true
      }
      case "PING":
        replyLine(d, { command: "PONG", params: [SERVER_NAME, p[0] ?? ""] })
        return true
      case "PONG":
        return true
      case "QUIT":
        closeWith(d, "Bye")
        return true
      case "PASS":
      case "USER":
        numeric(d, "462", "You may not reregister")
        return true
      case "AUTHENTICATE":
        // A connection is bound to its account and network at registration, so there is no SASL afterwards:
        // 907 (sasl-3.1) after a SASL sign-in, else 462 as for PASS and USER (RFC 2812 §3.1.3).
        if (d.saslSignedIn) numeric(d, "907", "You have already authenticated using SASL")
        else numeric(d, "462", "You may not reregister")
        return true
      case "CHATHISTORY":
        yield* onChatHistory(deps, d, p)
        return true
      case "BOUNCER":
        yield* onBouncer(deps, d, p)
        return true
      case "MARKREAD":
        yield* onMarkRead(deps, d, p)
        return true
      case "ISUPPORT":
        yield* isupportNow(deps, d)
        return true
      case "SEARCH":
        yield* onSearch(deps, d, p)
        return true
      case "WEBPUSH":
        yield* onWebPush(deps, d, p)
        return true
      case "METADATA":
        // draft/metadata-2 is Belay's once negotiated (Metadata.ts); without it the command goes upstream as written.
        if (!d.caps.enabled.has(METADATA_CAP)) return false
        yield* onMetadata(deps, d, p)
        return true
      case "AWAY":
        // IRCv3 pre-away: `AWAY *` says this client is not the member being present (auto-away, SessionHub); it is
        // not an away message to set upstream. `AWAY` with no message makes it present again, and goes on upstream.
        if (!d.caps.enabled.has("draft/pre-away")) return false
        if (p[0] === "*") {
          setPresent(deps, d, false)
          numeric(d, "306", "You have been marked as being away")
          return true
        }
        if (p[0] === undefined || p[0] === "") setPresent(deps, d, true)
        return false
      default:
        return false
    }
  })

const setPresent = (deps: ListenerDeps, d: Downstream, present: boolean) => {
  d.present = present
  if (d.handle !== undefined) deps.hub.setPresent(d.handle, present)
}

/** One line of a registered client. */
export const onClientLine = (deps: ListenerDeps, d: Downstream, line: IrcLine, label: string | undefined) =>
  Effect.gen(function*() {
    if (yield* onMultiline(deps, d, line, label)) return
    if (yield* local(deps, d, line)) return
    const network = d.network
    if (network === undefined) {
      return fail(d, line.command, "INVALID_TARGET", [], "This is a control connection; sign in as account/network")
    }
    if (d.signedIn?.readOnly !== false) return fail(d, line.command, "READ_ONLY", [], "This sign-in may only read")
    yield* upstreamCommand(deps, d, network.id, line, label)
  })
