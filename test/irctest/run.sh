#!/usr/bin/env bash
# Runs irctest's server specs that apply to a bouncer against Belay (belay_controller.py), one pytest process (so one
# `belay serve`, one fresh database) per spec file, and prints passed / failed / skipped per file from the JUnit
# reports. Usage: test/irctest/run.sh <irctest checkout> [spec file names without .py …]
# Needs: pytest (>= 7.4; python3 -m pytest), ngircd (or inspircd with BELAY_IRCTEST_UPSTREAM=inspircd), psql and a
# PostgreSQL at BELAY_IRCTEST_DATABASE (default postgres://postgres@127.0.0.1:5432). Reports go to
# ${BELAY_IRCTEST_OUT:-test-output/irctest}.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
irctest="$(cd "${1:?usage: run.sh <irctest checkout> [spec …]}" && pwd)"
shift
out="${BELAY_IRCTEST_OUT:-$here/../../test-output/irctest}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
specs=("$@")
if [ ${#specs[@]} -eq 0 ]; then
  specs=(cap connection_registration sasl message_tags time echo_message labeled_responses chathistory read_marker
    account_tag multiline redact metadata_3 isupport messages away_notify extended_join multi_prefix setname)
fi
for spec in "${specs[@]}"; do
  (cd "$irctest" && PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest -p no:cacheprovider \
    --controller belay_controller -m 'not implementation-specific and not deprecated and not strict' \
    --junitxml="$out/$spec.xml" -o junit_logging=no -q "irctest/server_tests/$spec.py" >"$out/$spec.log" 2>&1)
  echo "$spec: exit $?"
done
python3 - "$out" "${specs[@]}" <<'PY'
import sys, xml.etree.ElementTree as ET
out, specs = sys.argv[1], sys.argv[2:]
total = [0, 0, 0]
print(f"{'spec file':28} passed failed skipped")
for spec in specs:
    try:
        suite = ET.parse(f"{out}/{spec}.xml").getroot().find("testsuite")
    except (OSError, ET.ParseError):
        print(f"{spec + '.py':28} (no report; see {spec}.log)")
        continue
    cases = suite.findall("testcase")
    failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    passed = len(cases) - failed - skipped
    for i, n in enumerate((passed, failed, skipped)):
        total[i] += n
    print(f"{spec + '.py':28} {passed:6} {failed:6} {skipped:7}")
print(f"{'total':28} {total[0]:6} {total[1]:6} {total[2]:7}")
PY
