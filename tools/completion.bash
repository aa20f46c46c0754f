# bash completion of fltrace (installed as share/bash-completion/completions/fltrace): commands,
# options, the names of policies, prefetchers, far-memory backends and report formats, asked of
# fltrace, and the words of --by, --kind, --access, --names, --poll and --files (install_docs checks
# that fltrace takes each of these).
#
# Options come from each command's --help (its lines that begin with an option), names from the
# tables --help prints them from (the hidden `fltrace --complete policies|backends|formats`), so
# completion offers exactly what --help lists.

# _fltrace_list NAMES: completes the last name of the comma-separated list $cur from NAMES,
# leaving out the names the list holds already
_fltrace_list()
{
	local head= have name words=
	[[ $cur == *,* ]] && head=${cur%,*},
	IFS=, read -r -a have <<< "${head%,}"
	for name in $1; do
		[[ " ${have[*]} " == *" $name "* ]] || words+=" $name"
	done
	COMPREPLY=($(compgen -P "$head" -W "$words" -- "${cur##*,}"))
	[[ ${#COMPREPLY[@]} -gt 0 ]] && compopt -o nospace 2> /dev/null
}

# _fltrace_options FLTRACE CMD: the long options of `FLTRACE CMD --help`, one a line
_fltrace_options()
{
	"$1" "$2" --help 2> /dev/null | sed -nE '/^ +-/{s/^ +//; s/  .*//; p}' |
		grep -oE -- '--[a-z][-a-z]*'
}

_fltrace()
{
	local cur prev words cword split
	_init_completion -s || return

	local bin=${words[0]} cmd= i
	for ((i = 1; i < cword; i++)); do
		if [[ ${words[i]} == -- && ( $cmd == record || $cmd == sweep ) ]]; then
			_command_offset $((i + 1)) # the traced command and its own arguments
			return
		fi
		[[ -z $cmd && ${words[i]} != -* ]] && cmd=${words[i]}
	done

	if [[ -z $cmd || $cmd == help ]]; then
		if [[ -z $cmd && $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
		elif [[ -z $cmd || $cword -eq 2 ]]; then
			COMPREPLY=($(compgen -W "$("$bin" --complete commands 2> /dev/null)" -- "$cur"))
		fi
		return
	fi

	case $prev in
	--policy | --prefetch)
		# sweep takes comma-separated lists: complete the last name of one
		local names; names=$("$bin" --complete "$([[ $prev == --policy ]] && echo policies || echo prefetchers)" 2> /dev/null)
		if [[ $cmd == sweep ]]; then
			_fltrace_list "$names"
		else
			COMPREPLY=($(compgen -W "$names" -- "$cur"))
		fi
		return
		;;
	--kind)
		_fltrace_list "zero refetch file wp syscall prefetch"
		return
		;;
	--access)
		_fltrace_list "read write wp"
		return
		;;
	--by | --names | --poll | --files)
		local -A values=([--by]="stack line function caller alloc" [--names]="func lib"
			[--poll]="percpu adaptive block spin" [--files]="mapped all")
		COMPREPLY=($(compgen -W "${values[$prev]}" -- "$cur"))
		return
		;;
	--far)
		COMPREPLY=($(compgen -W "$("$bin" --complete backends 2> /dev/null)" -- "$cur"))
		[[ ${COMPREPLY-} == *: ]] && compopt -o nospace
		return
		;;
	--format)
		COMPREPLY=($(compgen -W "$("$bin" --complete formats 2> /dev/null)" -- "$cur"))
		return
		;;
	-i | --input | -o | --output | --diff)
		_filedir -d
		return
		;;
	--far-auth)
		_filedir
		return
		;;
	-L | --localmem | -M | --maxmem | -C | --handlers | --cores | -S | --samplerate | --far-latency | \
		--far-replicas | --far-timeout | --far-clear | --depth | --alloc-sample | \
		--pid | --time | --top | --title | --width | --minwidth | --fold | --keep-local | --advise)
		return # a value to type: nothing to offer
		;;
	esac
	$split && return

	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_fltrace_options "$bin" "$cmd")" -- "$cur"))
		return
	fi
	# record and sweep: the first word that is not an option starts the command to trace
	[[ $cmd == record || $cmd == sweep ]] && _command_offset $cword
} &&
	complete -F _fltrace fltrace
