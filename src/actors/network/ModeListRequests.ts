/**
 * ModeListRequests: the on-demand channel list queries of `get_mode_list` in flight on one connection, and the
 * correlation of the server's replies with the callers waiting for them.
 *
 * Concurrency rule: an immutable value owned by the network actor's single dispatcher fiber, which calls
 * `register` when a command arrives, `onLine` for every line from the server (before storing it), `expire` when
 * a caller's timeout fires and `reset` on disconnect. Nothing here does I/O or reads a clock.
 *
 * Which numeric carries which list (RFC 2812 §3.2.3 and §5.1; modern.ircdocs.horse for 728/729):
 *
 * | letter | query        | entry                                      | end |
 * |--------|--------------|--------------------------------------------|-----|
 * | b      | MODE #c b    | 367 `<me> <chan> <mask> [<setter> <ts>]`    | 368 |
 * | e      | MODE #c e    | 348 (same shape)                           | 349 |
 * | I      | MODE #c I    | 346 (same shape)                           | 347 |
 * | q      | MODE #c q    | 728 `<me> <chan> q <mask> [<setter> <ts>]`  | 729 `<me> <chan> q :End…` |
 *
 * `q` is a quiet list only where CHANMODES lists it as type A (Solanum/Libera); on ngircd and InspIRCd `q` is
 * the owner prefix, and `MODE #c q` is answered with a 482 or nothing, so the caller
 * refuses `q` there before registering (see `isListLetter`).
 *
 * Why fences. A refusal (482, 403, 442, 472…) carries no trace of the command it answers. InspIRCd answers a
 * refused `+b`, `TOPIC` and `+k` with three 482s that differ only in their text, and ngircd says "You are not
 * channel operator" to everything, so a 482 for `#a` arriving while a list query for `#a` is pending may well
 * answer a `set_topic` or `set_channel_modes` sent just before it (ZNC's route_replies and soju meet the same
 * problem, and soju solves it only with IRCv3 labeled-response, which our transport does not negotiate). Servers process one client's commands in order and answer in order, so
 * Belay brackets each query as `PING :<open>`, `MODE #c x`, `PING :<close>`: every reply to a command sent
 * earlier arrives before the opening PONG, every reply to a command sent later after the closing one. Between
 * the two PONGs the numerics that answer a command are the answer to our MODE, so "correlate by order per
 * channel" becomes exact, and a query the server ignores is known to be unanswered at the closing PONG instead
 * of waiting for the timeout. (Servers echo the PING token in their PONG: ngircd `IRC_PING`, Solanum `m_ping`,
 * InspIRCd, Ergo. ngircd built with --enable-strict-rfc does not; there queries end by timeout.)
 *
 * Concurrent requests for the same channel and letter are coalesced: the second caller waits on the query in
 * flight and gets the same answer (one MODE on the wire, as irc-framework merges per channel). Queries for
 * different channels or letters are separate, each in its own fence window, and replies are matched by channel
 * (casemapped) and list numeric, so their entries never cross.
 *
 * A caller whose timeout fires is removed (`expire`), but its query stays as an orphan that keeps swallowing its
 * replies until the closing PONG, so late entries neither reach the server buffer nor answer a newer request.
 */
import { Either } from "effect"
import { type CaseMapping, equalsFolded } from "../../irc/CaseMapping.js"
import { formatLine, type IrcLine } from "../../irc/IrcLine.js"
import { isChannel, type ISupport } from "../../irc/ISupport.js"
import { isErrorNumeric, Numeric } from "../../irc/Numerics.js"
import { unixTime } from "../../irc/ServerTime.js"
import type { ModeList, ModeListEntry, ModeListLetter } from "../../schema/ChannelMode.js"
import { toIsoTime } from "../../schema/Ids.js"
import { Refused, Timeout } from "../../schema/ToolErrors.js"

/** The actor's id for one waiting caller (it keeps the caller's Deferred under it). */
export type RequestId = number

/** The lists get_mode_list fetches (the interface: b, e, I, q). */
export type ListLetter = ModeListLetter

export const LIST_NUMERICS: Readonly<Record<ListLetter, { readonly entry: string; readonly end: string }>> = {
  b: { entry: Numeric.RPL_BANLIST, end: Numeric.RPL_ENDOFBANLIST },
  e: { entry: Numeric.RPL_EXCEPTLIST, end: Numeric.RPL_ENDOFEXCEPTLIST },
  I: { entry: Numeric.RPL_INVITELIST, end: Numeric.RPL_ENDOFINVITELIST },
  q: { entry: Numeric.RPL_QUIETLIST, end: Numeric.RPL_ENDOFQUIETLIST }
}

const ENTRY_LETTER: ReadonlyMap<string, ListLetter> = new Map([
  [Numeric.RPL_BANLIST, "b"],
  [Numeric.RPL_EXCEPTLIST, "e"],
  [Numeric.RPL_INVITELIST, "I"],
  [Numeric.RPL_QUIETLIST, "q"]
])
const END_LETTER: ReadonlyMap<string, ListLetter> = new Map([
  [Numeric.RPL_ENDOFBANLIST, "b"],
  [Numeric.RPL_ENDOFEXCEPTLIST, "e"],
  [Numeric.RPL_ENDOFINVITELIST, "I"],
  [Numeric.RPL_ENDOFQUIETLIST, "q"]
])

/**
 * True when `letter` is a list this network can be asked for: one of b, e, I, q and advertised as a type A
 * (list) mode in CHANMODES. That refuses `q` where it is the owner prefix (ngircd, InspIRCd) and `e`/`I` where
 * the network has no exception lists; the caller answers InvalidArguments.
 */
export const isListLetter = (isupport: ISupport, letter: string): letter is ListLetter =>
  (letter === "b" || letter === "e" || letter === "I" || letter === "q") && isupport.chanModes.a.includes(letter)

/** How a query ended, for each of its waiters. */
export type ModeListResult =
  | {
      readonly _tag: "Entries"
      readonly channel: string
      readonly letter: ListLetter
      /** In the order the server sent them. */
      readonly entries: ReadonlyArray<ModeListEntry>
    }
  /** The server refused the query: its numeric (`"482"`) and the text of its last param. */
  | { readonly _tag: "Refused"; readonly numeric: string; readonly text: string }
  /** The closing PONG came and the server had answered neither with the list nor with a refusal. */
  | { readonly _tag: "NoReply"; readonly channel: string; readonly letter: ListLetter }

export interface Completion {
  readonly requestId: RequestId
  readonly result: ModeListResult
}

type Phase =
  /** The lines are sent; the opening PONG has not come back. Replies now answer earlier commands. */
  | "sent"
  /** Between the PONGs: replies answer our MODE. */
  | "open"
  /** The list or a refusal arrived; only the closing PONG is left to swallow. */
  | "answered"

interface Query {
  readonly seq: number
  /** As the first caller spelled it; the answer carries it back. */
  readonly channel: string
  readonly letter: ListLetter
  readonly openToken: string
  readonly closeToken: string
  /** Oldest first; empty for an orphan whose callers all timed out. */
  readonly waiters: ReadonlyArray<RequestId>
  readonly entries: ReadonlyArray<ModeListEntry>
  readonly phase: Phase
}

export interface ModeListRequests {
  readonly nextSeq: number
  /** Oldest first, which is also the order the server answers them in. */
  readonly queries: ReadonlyArray<Query>
}

export const emptyModeListRequests: ModeListRequests = { nextSeq: 1, queries: [] }

/**
 * Orphans kept at most. An orphan leaves at its closing PONG; the bound only matters against a server that
 * never echoes PING tokens, where each orphan would otherwise stay until disconnect.
 */
export const MAX_ORPHANS = 32

const TOKEN_PREFIX = "belay-ml-"

export interface Registered {
  readonly state: ModeListRequests
  /**
   * Lines to write, in this order and with nothing of ours in between (`PING`, `MODE #c x`, `PING`); empty when
   * the request was coalesced onto a query already in flight.
   */
  readonly lines: ReadonlyArray<string>
}

/**
 * Adds a waiter for `channel`'s `letter` list. The caller has checked the letter (`isListLetter`) and that
 * `channel` is a sendable channel name (`Safety.isMiddleParam`, `ISupport.isChannel`); `formatLine` throws on
 * a name it cannot send. An unanswered query for the same channel (casemapped) and letter is joined rather
 * than repeated, so its answer may predate this call by the query's round trip.
 */
export const register = (
  state: ModeListRequests,
  request: { readonly channel: string; readonly letter: ListLetter; readonly requestId: RequestId },
  caseMapping: CaseMapping
): Registered => {
  const inFlight = findLast(
    state.queries,
    (q) =>
      q.phase !== "answered" && q.letter === request.letter && equalsFolded(caseMapping, q.channel, request.channel)
  )
  if (inFlight !== undefined) {
    return {
      state: replace(state, inFlight.seq, (q) => ({ ...q, waiters: [...q.waiters, request.requestId] })),
      lines: []
    }
  }
  const seq = state.nextSeq
  const query: Query = {
    seq,
    channel: request.channel,
    letter: request.letter,
    openToken: `${TOKEN_PREFIX}${seq}-open`,
    closeToken: `${TOKEN_PREFIX}${seq}-close`,
    waiters: [request.requestId],
    entries: [],
    phase: "sent"
  }
  return {
    state: { nextSeq: seq + 1, queries: [...state.queries, query] },
    lines: [
      formatLine({ command: "PING", params: [query.openToken] }),
      formatLine({ command: "MODE", params: [request.channel, request.letter] }),
      formatLine({ command: "PING", params: [query.closeToken] })
    ]
  }
}

export interface LineOutcome {
  readonly state: ModeListRequests
  /** True when the line belonged to a list query: the actor neither stores it nor treats it further. */
  readonly consumed: boolean
  /** Waiters answered by this line (all waiters of a coalesced query at once). */
  readonly completed: ReadonlyArray<Completion>
}

/**
 * Feeds one line from the server. Consumes: our PONGs; list entries and end numerics for the channel and letter
 * of the query whose fence window is open; an error numeric inside an open window that names that query's
 * channel, or names no channel at all (472 `<me> <letter>`, 481, 723) — a 472 only for the query's own letter.
 * Everything else is left alone (`consumed: false`), including a list the user asked for with `send_raw`,
 * whose replies arrive outside our windows.
 */
export const onLine = (
  state: ModeListRequests,
  line: IrcLine,
  ctx: { readonly caseMapping: CaseMapping; readonly isupport: ISupport }
): LineOutcome => {
  const notOurs: LineOutcome = { state, consumed: false, completed: [] }
  const p = line.params
  const command = line.command

  if (command === "PONG") {
    const token = p[p.length - 1]
    if (token === undefined || !token.startsWith(TOKEN_PREFIX)) return notOurs
    const opening = state.queries.find((q) => q.openToken === token)
    if (opening !== undefined) {
      return {
        state: replace(state, opening.seq, (q) => (q.phase === "sent" ? { ...q, phase: "open" } : q)),
        consumed: true,
        completed: []
      }
    }
    const closing = state.queries.find((q) => q.closeToken === token)
    if (closing === undefined) return { state, consumed: true, completed: [] } // an orphan dropped by MAX_ORPHANS
    const completed = closing.phase === "answered"
      ? []
      : complete(closing, { _tag: "NoReply", channel: closing.channel, letter: closing.letter })
    return { state: remove(state, closing.seq), consumed: true, completed }
  }

  if (state.queries.length === 0) return notOurs
  const open = (f: (q: Query) => boolean) => state.queries.find((q) => q.phase === "open" && f(q))
  const sameChannel = (q: Query, channel: string) => equalsFolded(ctx.caseMapping, q.channel, channel)

  const entryLetter = ENTRY_LETTER.get(command)
  if (entryLetter !== undefined) {
    // 728 names its list (`q`) before the mask; the others imply it by number.
    const hasLetterParam = command === Numeric.RPL_QUIETLIST
    const channel = p[1]
    const letter = hasLetterParam ? p[2] : entryLetter
    const maskAt = hasLetterParam ? 3 : 2
    const mask = p[maskAt]
    if (channel === undefined || mask === undefined) return notOurs
    const query = open((q) => q.letter === letter && sameChannel(q, channel))
    if (query === undefined) return notOurs
    const setBy = p[maskAt + 1]
    const setAt = unixTime(p[maskAt + 2])
    const entry: ModeListEntry = {
      mask,
      setBy: setBy === undefined || setBy === "" ? null : setBy,
      setAt: setAt === null ? null : toIsoTime(setAt)
    }
    return {
      state: replace(state, query.seq, (q) => ({ ...q, entries: [...q.entries, entry] })),
      consumed: true,
      completed: []
    }
  }

  const endLetter = END_LETTER.get(command)
  if (endLetter !== undefined) {
    const channel = p[1]
    const letter = command === Numeric.RPL_ENDOFQUIETLIST && p.length > 3 ? p[2] : endLetter
    if (channel === undefined) return notOurs
    const query = open((q) => q.letter === letter && sameChannel(q, channel))
    if (query === undefined) return notOurs
    return answer(state, query, {
      _tag: "Entries",
      channel: query.channel,
      letter: query.letter,
      entries: query.entries
    })
  }

  if (isErrorNumeric(command)) {
    // The client's nick is first and the text last; a channel in between says which channel it is about.
    const middle = p.slice(1, -1)
    const channels = middle.filter((x) => isChannel(ctx.isupport, x))
    const query = open((q) => {
      // A query that has started its list is not being refused.
      if (q.entries.length > 0) return false
      if (channels.length > 0) return channels.some((c) => sameChannel(q, c))
      if (command === Numeric.ERR_UNKNOWNMODE) return middle[0] === q.letter
      return true
    })
    if (query === undefined) return notOurs
    return answer(state, query, { _tag: "Refused", numeric: command, text: p.length > 1 ? (p[p.length - 1] ?? "") : "" })
  }

  return notOurs
}

/**
 * Removes one waiter (its timeout fired; the actor answers it Timeout itself). Its query stays in flight
 * as an orphan when it has no waiter left. `found` is false when the request had already completed.
 */
export const expire = (
  state: ModeListRequests,
  requestId: RequestId
): { readonly state: ModeListRequests; readonly found: boolean } => {
  const query = state.queries.find((q) => q.waiters.includes(requestId))
  if (query === undefined) return { state, found: false }
  const next = replace(state, query.seq, (q) => ({ ...q, waiters: q.waiters.filter((id) => id !== requestId) }))
  return { state: dropExcessOrphans(next), found: true }
}

/** On disconnect: every waiter still pending (the actor answers them NotConnected) and an empty state. */
export const reset = (
  state: ModeListRequests
): { readonly state: ModeListRequests; readonly waiters: ReadonlyArray<RequestId> } => ({
  state: { nextSeq: state.nextSeq, queries: [] },
  waiters: state.queries.flatMap((q) => q.waiters)
})

/** Waiters currently pending, oldest query first. */
export const pendingRequests = (state: ModeListRequests): ReadonlyArray<RequestId> =>
  state.queries.flatMap((q) => q.waiters)

/** How a query is named in a Timeout's message. */
export const queryName = (channel: string, letter: ListLetter): string => `the ${letter} list query for ${channel}`

/**
 * The answer for a result (get_mode_list): the list, Refused with the server's numeric and text, or Timeout when the
 * server ended its reply without either (the list never came, and no bound ran out).
 */
export const outcome = (result: ModeListResult): Either.Either<ModeList, Refused | Timeout> => {
  switch (result._tag) {
    case "Entries":
      return Either.right({ channel: result.channel, letter: result.letter, entries: result.entries })
    case "Refused":
      return Either.left(new Refused({ numeric: result.numeric, text: result.text }))
    case "NoReply":
      return Either.left(new Timeout({ operation: queryName(result.channel, result.letter) }))
  }
}

// ---------------------------------------------------------------------------------------------------------------

const complete = (query: Query, result: ModeListResult): ReadonlyArray<Completion> =>
  query.waiters.map((requestId) => ({ requestId, result }))

// The query stays (answered, no waiters) until its closing PONG, which it still has to swallow.
const answer = (state: ModeListRequests, query: Query, result: ModeListResult): LineOutcome => ({
  state: dropExcessOrphans(replace(state, query.seq, (q) => ({ ...q, phase: "answered", waiters: [], entries: [] }))),
  consumed: true,
  completed: complete(query, result)
})

const replace = (state: ModeListRequests, seq: number, f: (q: Query) => Query): ModeListRequests => ({
  ...state,
  queries: state.queries.map((q) => (q.seq === seq ? f(q) : q))
})

const remove = (state: ModeListRequests, seq: number): ModeListRequests => ({
  ...state,
  queries: state.queries.filter((q) => q.seq !== seq)
})

const dropExcessOrphans = (state: ModeListRequests): ModeListRequests => {
  const orphans = state.queries.filter((q) => q.waiters.length === 0)
  if (orphans.length <= MAX_ORPHANS) return state
  const drop = new Set(orphans.slice(0, orphans.length - MAX_ORPHANS).map((q) => q.seq))
  return { ...state, queries: state.queries.filter((q) => !drop.has(q.seq)) }
}

const findLast = <A>(items: ReadonlyArray<A>, f: (a: A) => boolean): A | undefined => {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]
    if (item !== undefined && f(item)) return item
  }
  return undefined
}
