#!/bin/sh
# analyze/cli-files.sh MEMSIGHT OUTDIR: the man pages and the bash completion,
# made from what memsight itself says, so neither can drift from it:
#   OUTDIR/man/memsight.1 (memsight -h) and OUTDIR/man/memsight-CMD.1 (memsight
#   CMD -h) for every command memsight --list-commands names;
#   OUTDIR/completion/memsight: the commands, and each command's long options
#   as its -h lists them.
# A page holds its command's help text whole, as -h prints it, in a no-fill
# block: the help is written for a terminal 80 columns wide already. Then
# the command's guide, where it has one: CMD.md beside its code (record/,
# analyze/cmd/, flamegraph/), which the README points to.
set -eu
M=$1
out=$2
top=$(cd "$(dirname "$0")/.." && pwd)
version=$("$M" --version | sed 's/^memsight //')
mkdir -p "$out/man" "$out/completion"

# roff: a backslash is \e, and a line must not start with . or '.
roff_text() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }

# A command's guide (markdown, beside its code) in roff: a section per
# heading, code blocks and tables as they are, bullets, and inline code,
# emphasis and links as plain words.
guide_roff() {
	roff_text | awk '
		function inline(s) {
			gsub(/\*\*/, "", s)
			while (match(s, /`[^`]*`/))
				s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 1, RLENGTH - 2) "\\fR" substr(s, RSTART + RLENGTH)
			while (match(s, /\[[^]]*\]\([^)]*\)/)) {
				t = substr(s, RSTART, RLENGTH)
				sub(/\]\(.*/, "", t)
				s = substr(s, 1, RSTART - 1) substr(t, 2) substr(s, RSTART + RLENGTH)
			}
			return s
		}
		/^```/ { code = !code; print code ? ".PP\n.nf" : ".fi"; next }
		code { print; next }
		/^# / { next }
		/^## / { sub(/^## /, ""); print ".SH \"" toupper($0) "\""; next }
		/^### / { sub(/^### /, ""); print ".SS \"" $0 "\""; next }
		/^\|/ { if (!table) print ".PP\n.nf"; table = 1; if ($0 !~ /^\|[-| ]*$/) print; next }
		table { print ".fi"; table = 0 }
		/^- / { sub(/^- /, ""); print ".IP \\(bu 2"; print inline($0); next }
		/^$/ { print ".PP"; next }
		{ print inline($0) }
		END { if (table || code) print ".fi" }'
}

page() {
	name=$1 summary=$2 guide=$3
	shift 3
	{
		printf '.TH %s 1 "" "memsight %s" "memsight"\n' "$(echo "$name" | tr a-z A-Z)" "$version"
		printf '.SH NAME\n%s \\- %s\n' "$name" "$(echo "$summary" | roff_text)"
		printf '.SH DESCRIPTION\n.nf\n'
		"$M" "$@" -h | roff_text
		printf '.fi\n'
		[ -z "$guide" ] || guide_roff <"$guide"
		printf '.SH SEE ALSO\n'
		if [ "$name" = memsight ]; then
			"$M" --list-commands | sed 's/.*/\\fBmemsight-&\\fR(1)/' | paste -sd, - | sed 's/,/, /g'
		else
			printf '\\fBmemsight\\fR(1)\n'
		fi
	} >"$out/man/$name.1"
}

page memsight "find where memory goes on a running Linux system" ""
"$M" --list-commands >"$out/commands"
while read -r cmd; do
	summary=$("$M" -h | awk -v c="$cmd" '$1 == c && /^  [a-z]/ { sub(/^  [a-z]+ +/, ""); s = $0; on = 1; next }
		on && /^              / { sub(/^ +/, ""); s = s " " $0; next } { on = 0 } END { print s }')
	guide=
	for g in "$top/record/$cmd.md" "$top/analyze/cmd/$cmd.md" "$top/flamegraph/$cmd.md"; do
		[ -f "$g" ] && guide=$g
	done
	page "memsight-$cmd" "${summary:-memsight $cmd}" "$guide" "$cmd"
done <"$out/commands"

# Completion: the commands first; after one, its long options, and files.
{
	printf '# bash completion for memsight, made by analyze/cli-files.sh from memsight -h\n'
	printf '_memsight()\n{\n\tlocal cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} opts\n'
	printf '\tif [ "$COMP_CWORD" -eq 1 ]; then\n'
	printf '\t\tCOMPREPLY=($(compgen -W "%s help" -- "$cur"))\n\t\treturn\n\tfi\n' "$(paste -sd' ' "$out/commands")"
	printf '\tcase $cmd in\n'
	while read -r cmd; do
		opts=$("$M" "$cmd" -h | grep -oE -- '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' | sed 's/.*--/--/' | sort -u |
			paste -sd' ' -)
		printf '\t%s) opts="%s" ;;\n' "$cmd" "$opts"
	done <"$out/commands"
	printf '\t*) opts="" ;;\n\tesac\n'
	printf '\tif [[ $cur == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W "$opts" -- "$cur"))\n'
	printf '\telse\n\t\tCOMPREPLY=($(compgen -f -- "$cur"))\n\tfi\n}\n'
	printf 'complete -o filenames -F _memsight memsight\n'
} >"$out/completion/memsight"
rm -f "$out/commands"
