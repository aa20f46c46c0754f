# bash completion of fltrace (installed as share/bash-completion/completions/fltrace): commands,
# options, and the names of policies, far-memory backends and report formats, all asked of fltrace.
#
# Options come from each command's --help (its lines that begin with an option), names from the
# tables --help prints them from (the hidden `fltrace --complete policies|backends|formats`), so
# completion offers exactly what --help lists.

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
	--policy)
		# sweep takes a comma-separated list: complete the last name of it
		local head=
		[[ $cmd == sweep && $cur == *,* ]] && head=${cur%,*},
		COMPREPLY=($(compgen -P "$head" -W "$("$bin" --complete policies 2> /dev/null)" -- "${cur##*,}"))
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
		--far-replicas | --far-timeout | --far-clear | --depth | --poll | --files | --alloc-sample | --by | --kind | \
		--access | --pid | --time | --top | --title | --width | --minwidth | --fold | --names | \
		--keep-local | --advise)
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
