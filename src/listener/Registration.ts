/**
 * Registration: an IRC client's connection before it is welcomed — CAP negotiation, PASS, NICK, USER, SASL PLAIN
 * (AUTHENTICATE, payload at most SASL_PAYLOAD_BYTES), `BOUNCER BIND` — and its completion: the sign-in (SignIn.ts)
 * and the network it binds to, named in the user name (`account/network@client`), by BIND, or none (a control
 * connection). Failures answer as IRCv3 sasl-3.1 and RFC 2812 say: 904 for SASL (the client may retry), 905 for a
 * payload chunk over 400 bytes, 906 when registration completes during an exchange, 461 for an empty USER name or
 * real name, 464 for a wrong PASS, `FAIL * ACCOUNT_REQUIRED` without credentials when SASL was negotiated; a sign-in
 * refused by the limiter ends the connection (docs/contract.md "The IRC client listener").
 *
 * Concurrency rule: runs on the connection's session fiber only (DownstreamSession.ts).
 */
import { Effect, Option } from "effect"
import type { IrcLine } from "../irc/IrcLine.js"
import { offeredCaps, onCap } from "./CapNegotiation.js"
import { type Downstream, fail, flush, numeric, refreshView, replyLine, SERVER_NAME, write } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { ownLine } from "./MessageLines.js"
import { onMetadataRegistering } from "./Metadata.js"
import { isupportTokens, sendIsupport } from "./IsupportReply.js"
import { signIn } from "./SignIn.js"
import { mergeSignInNames, parsePass, parseSignInName } from "./SignInName.js"
import { vapidFor } from "./WebPush.js"

/** IRCv3 sasl-3.1 leaves the bound to the server; soju's 10 KiB. */
export const SASL_PAYLOAD_BYTES = 10 * 1024
/** AUTHENTICATE payloads come in chunks of this many bytes; a shorter one (or `+`) ends it (sasl-3.1). */
const SASL_CHUNK = 400

/** An away message kept before registration (draft/pre-away) is cut to this many characters. */
export const AWAY_BYTES = 390

/** What a step of registration asks of the session. */
export type Step = "continue" | "ready" | "close"

/** Ends the connection with an ERROR line (RFC 2812 §3.7.4). */
export const closeWith = (d: Downstream, reason: string): Step => {
  write(d, ownLine(d.view, { command: "ERROR", params: [reason] }))
  flush(d)
  d.closing = true
  d.socket.end()
  return "close"
}

const NICK = /^[^\s,*?!@:#&$][^\s,*?!@:]{0,63}$/

/** One line of a client that is not registered yet. */
export const onRegistering = (deps: ListenerDeps, d: Downstream, line: IrcLine): Effect.Effect<Step> =>
  Effect.gen(function*() {
    const p = line.params
    switch (line.command) {
      case "CAP": {
        const outcome = onCap(d.caps, p, { nick: "*", registered: false, offered: offeredCaps(undefined) })
        d.caps = outcome.state
        refreshView(d)
        for (const r of outcome.replies) replyLine(d, r)
        break
      }
      case "PASS":
        if (p[0] === undefined) numeric(d, "461", "PASS", "Not enough parameters")
        else d.pass = p[0]
        break
      case "NICK":
        if (p[0] === undefined || !NICK.test(p[0])) numeric(d, "432", p[0] ?? "*", "Erroneous nickname")
        else {
          d.nick = p[0]
          refreshView(d)
        }
        break
      case "USER":
        // Modern IRC (USER): an empty user name or real name is ERR_NEEDMOREPARAMS, as a missing one is.
        if ((p.length < 4 && p[0] === undefined) || p[0] === "" || p[3] === "") {
          numeric(d, "461", "USER", "Not enough parameters")
        } else {
          d.userSeen = true
          d.user = parseSignInName(p[0]!)
        }
        break
      case "AUTHENTICATE":
        return yield* authenticate(deps, d, p[0] ?? "")
      case "BOUNCER":
        if ((p[0] ?? "").toUpperCase() === "BIND" && p[1] !== undefined && /^\d{1,15}$/.test(p[1])) {
          d.bindNetworkId = Number(p[1])
        } else fail(d, "BOUNCER", "INVALID_NETID", [p[1] ?? "*"], "Only BIND is accepted before registration")
        break
      case "AWAY":
        // IRCv3 pre-away: accepted before registration once negotiated, applied when the client is registered
        // (DownstreamSession.ts); `AWAY *` says the client is not the member being present.
        if (!d.caps.enabled.has("draft/pre-away")) numeric(d, "451", "You have not registered")
        else {
          d.preAway = p[0] === undefined || p[0] === "" ? undefined : p[0].slice(0, AWAY_BYTES)
          d.present = d.preAway !== "*"
        }
        break
      case "ISUPPORT":
        // IRCv3 extended-isupport: before registration only once negotiated; what is known before the network is.
        if (!d.caps.enabled.has("draft/extended-isupport")) numeric(d, "451", "You have not registered")
        else sendIsupport(d, isupportTokens(undefined, undefined, undefined, vapidFor(deps, d)))
        break
      case "PING":
        replyLine(d, { command: "PONG", params: [SERVER_NAME, p[0] ?? ""] })
        break
      case "METADATA":
        // draft/metadata-2 `before-connect`: subscriptions only (Metadata.ts).
        if (!onMetadataRegistering(d, p)) numeric(d, "451", "You have not registered")
        break
      case "QUIT":
        return closeWith(d, "Bye")
      default:
        numeric(d, "451", "You have not registered")
    }
    return d.nick !== "*" && d.userSeen && !d.caps.negotiating ? "ready" : "continue"
  })

const authenticate = (deps: ListenerDeps, d: Downstream, param: string): Effect.Effect<Step> =>
  Effect.gen(function*() {
    if (d.signedIn !== undefined) {
      numeric(d, "907", "You have already authenticated using SASL")
      return "continue"
    }
    if (param === "*") {
      d.sasl = undefined
      d.saslTooLong = false
      numeric(d, "906", "SASL authentication aborted")
      return "continue"
    }
    if (d.sasl === undefined) {
      if (param.toUpperCase() !== "PLAIN") {
        numeric(d, "908", "PLAIN", "are available SASL mechanisms")
        numeric(d, "904", "SASL authentication failed")
        return "continue"
      }
      d.sasl = ""
      write(d, ownLine(d.view, { command: "AUTHENTICATE", params: ["+"] }))
      return "continue"
    }
    // sasl-3.1: a payload is sent in chunks of at most 400 bytes; a longer one is 905 ERR_SASLTOOLONG.
    if (param.length > SASL_CHUNK) {
      d.sasl = undefined
      d.saslTooLong = false
      numeric(d, "905", "SASL message too long")
      return "continue"
    }
    if (d.saslTooLong) {
      // The exchange already failed (904 below); the rest of its payload is read and dropped. A shorter chunk ends
      // it, unless it names a mechanism: a client that gave up at the 904 and starts again.
      if (param.length === SASL_CHUNK) return "continue"
      d.sasl = undefined
      d.saslTooLong = false
      return param.toUpperCase() === "PLAIN" ? yield* authenticate(deps, d, param) : "continue"
    }
    if (param !== "+") d.sasl += param
    if (d.sasl.length > SASL_PAYLOAD_BYTES * 4 / 3 + 4) {
      // Kept no further, and failed at once rather than when the payload ends: a client sending without end would
      // otherwise hear nothing until the registration timeout (sasl-3.1 leaves the bound and its moment to us).
      // A full chunk means more follows, to be dropped; a shorter one was the payload's last.
      d.saslTooLong = param.length === SASL_CHUNK
      d.sasl = d.saslTooLong ? "" : undefined
      numeric(d, "904", "SASL authentication failed: the payload is longer than 10 KiB")
      return "continue"
    }
    if (param.length === SASL_CHUNK) return "continue"
    const payload = Buffer.from(d.sasl, "base64").toString("utf8")
    d.sasl = undefined
    const [authzid, authcid, password] = payload.split("\u0000")
    const name = authcid === undefined ? undefined : parseSignInName(authcid)
    // Signing in as someone else (authzid ≠ authcid) is not offered.
    if (name === undefined || password === undefined || (authzid !== "" && authzid !== authcid)) {
      numeric(d, "904", "SASL authentication failed")
      return "continue"
    }
    const outcome = yield* signIn(deps, name.account, password, d.ipKey)
    if (outcome._tag === "Limited") {
      numeric(d, "904", "SASL authentication failed")
      return closeWith(d, "Too many failed sign-ins; try again later")
    }
    if (outcome._tag === "Invalid") {
      numeric(d, "904", "SASL authentication failed")
      return "continue"
    }
    d.signedIn = outcome.signedIn
    d.signInName = name
    d.saslSignedIn = true
    numeric(d, "900", `${d.nick}!${outcome.signedIn.accountName}@${SERVER_NAME}`, outcome.signedIn.accountName,
      `You are now logged in as ${outcome.signedIn.accountName}`)
    numeric(d, "903", "SASL authentication successful")
    return "continue"
  })

/**
 * NICK, USER and CAP END are in: signs in with PASS unless SASL did, and finds the network. "close" when it ended
 * the connection.
 */
export const complete = (deps: ListenerDeps, d: Downstream): Effect.Effect<Step> =>
  Effect.gen(function*() {
    if (d.sasl !== undefined || d.saslTooLong) {
      // sasl-3.1: registration completed while an exchange is under way aborts it with 906; the client then
      // registers without it (PASS), or is refused below as any client without credentials.
      d.sasl = undefined
      d.saslTooLong = false
      numeric(d, "906", "SASL authentication aborted")
    }
    if (d.signedIn === undefined) {
      if (d.pass === undefined) {
        if (d.caps.enabled.has("sasl")) fail(d, "*", "ACCOUNT_REQUIRED", [], "Sign in with SASL PLAIN or PASS")
        else numeric(d, "464", "Password required: PASS account[/network][@client]:secret or SASL PLAIN")
        return closeWith(d, "Authentication required")
      }
      const parts = parsePass(d.pass)
      d.pass = undefined
      const name = parts.name ?? d.user
      if (name === undefined) {
        numeric(d, "464", "Password incorrect")
        return closeWith(d, "Unknown user name; use account[/network][@client]")
      }
      const outcome = yield* signIn(deps, name.account, parts.secret, d.ipKey)
      if (outcome._tag !== "Ok") {
        numeric(d, "464", "Password incorrect")
        return closeWith(d, outcome._tag === "Limited" ? "Too many failed sign-ins; try again later" : "Password incorrect")
      }
      d.signedIn = outcome.signedIn
      d.signInName = d.user !== undefined && d.user.account.toLowerCase() === name.account.toLowerCase()
        ? mergeSignInNames(d.user, parts.name)
        : name
    } else if (d.user !== undefined && d.signInName !== undefined &&
      d.user.account.toLowerCase() === d.signInName.account.toLowerCase()) {
      // SASL named the account; USER may still name the network and client.
      d.signInName = mergeSignInNames(d.user, d.signInName)
    }
    const signedIn = d.signedIn
    const owned = yield* deps.networks.listForAccount(signedIn.accountId)
    const wanted = d.bindNetworkId !== undefined ? String(d.bindNetworkId) : d.signInName?.network ?? null
    if (wanted === null) return "ready"
    const network = owned.find((n) => String(n.id) === wanted) ??
      (d.bindNetworkId === undefined ? owned.find((n) => n.name.toLowerCase() === wanted.toLowerCase()) : undefined)
    if (network === undefined) {
      if (d.bindNetworkId !== undefined) fail(d, "BOUNCER", "INVALID_NETID", [wanted], "No such network on this account")
      return closeWith(d, `No network ${JSON.stringify(wanted)} on this account`)
    }
    d.network = { id: network.id, name: network.name }
    return "ready"
  })

/**
 * IRCv3 pre-away: an away message sent before registration becomes the member's away message on the bound network,
 * as a client's AWAY does after it (ClientCommands.ts); `AWAY *` only keeps the client out of auto-away's count
 * (SessionHub). A read-only sign-in is told it may not write, as it would be after registration.
 */
export const applyPreAway = (deps: ListenerDeps, d: Downstream): Effect.Effect<void> =>
  Effect.gen(function*() {
    const message = d.preAway
    d.preAway = undefined
    if (message === undefined || message === "*" || d.network === undefined) return
    // The session was attached leaving auto-away alone (SessionHub.attach): if the message is not set, it settles now.
    const unset = (code: string, description: string) => {
      fail(d, "AWAY", code, [], description)
      if (d.network !== undefined) deps.hub.settleAway(d.network.id)
    }
    if (d.signedIn?.readOnly !== false) return unset("READ_ONLY", "This sign-in may only read")
    const set = yield* Effect.either(deps.control.away(d.network.id, Option.some(message)))
    if (set._tag === "Left") unset(set.left._tag.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase(), "The away message could not be set")
  })
