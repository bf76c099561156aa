package stepio

import (
	"fmt"
	"strings"
)

// SplitArgs splits rendered program_arguments into argv as a POSIX shell
// would, without expanding anything: blanks separate words, single quotes
// keep everything, double quotes keep everything but \" and \\, and a
// backslash outside quotes escapes the next character.
func SplitArgs(s string) ([]string, error) {
	var (
		args  []string
		word  strings.Builder
		inArg bool
		quote rune
	)
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case quote == '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(runes) && (runes[i+1] == '"' || runes[i+1] == '\\'):
				i++
				word.WriteRune(runes[i])
			default:
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inArg = r, true
		case r == '\\' && i+1 < len(runes):
			i++
			word.WriteRune(runes[i])
			inArg = true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inArg {
				args = append(args, word.String())
				word.Reset()
				inArg = false
			}
		default:
			word.WriteRune(r)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("program_arguments has an unterminated %c quote: close it", quote)
	}
	if inArg {
		args = append(args, word.String())
	}
	return args, nil
}
