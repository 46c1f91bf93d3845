/**
 * ModeRequest: a client's `MODE #channel <modes> [params…]` read into the changes NetworkControl.setModes takes, with
 * the network's CHANMODES and PREFIX (RFC 2812 §3.2.3; modern.ircdocs.horse "Channel modes"). Undefined when the line
 * is not a list of changes setModes can carry — a query (no modes, or a list mode without its mask), an unknown
 * letter, a missing parameter — which then goes to the upstream as written. Pure.
 */
import { type ISupport, modeKind } from "../irc/ISupport.js"
import type { ModeChange } from "../schema/ChannelMode.js"

export const parseModeChanges = (
  isupport: ISupport,
  modes: string,
  args: ReadonlyArray<string>
): ReadonlyArray<ModeChange> | undefined => {
  const changes: Array<ModeChange> = []
  let sign: "+" | "-" | undefined
  let next = 0
  for (const letter of modes) {
    if (letter === "+" || letter === "-") {
      sign = letter
      continue
    }
    const kind = modeKind(isupport, letter)
    if (sign === undefined || kind === undefined) return undefined
    const takesParam = kind === "list" || kind === "prefix" || kind === "always-param" || (kind === "set-param" && sign === "+")
    if (!takesParam) {
      changes.push({ sign, letter })
      continue
    }
    const param = args[next++]
    // A key may be left out of -k (setModes sends the stored one); any other missing parameter is a query.
    if (param === undefined) {
      if (kind === "always-param" && sign === "-") {
        changes.push({ sign, letter })
        continue
      }
      return undefined
    }
    changes.push({ sign, letter, param })
  }
  return changes.length > 0 && next >= args.length ? changes : undefined
}
