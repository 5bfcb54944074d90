" Vim syntax file for rev, the reversible language of rlang (*.rev).
" The word lists below are tested against grammar/rev.lark and rlang/primitives.py
" (tests/editors/test_word_lists.py): keep one word per list entry.
if exists('b:current_syntax')
  finish
endif
let s:cpo_save = &cpo
set cpo&vim

" Keywords are words of letters, digits and `_`; a trailing `!` (`y!`) is matched
" by revMutated, so `!` stays out of the keyword characters here.
syn iskeyword @,48-57,_,192-255

let s:conditionals = ['if', 'elseif', 'else']
let s:loops = ['while', 'from', 'do', 'loop', 'until', 'for']
let s:functions = ['function']
let s:keywords = ['begin', 'end', 'const', 'wrt', 'into']
let s:includes = ['include']
let s:booleans = ['true', 'false']
let s:annotations = ['@routine', '@invcheckoff', '@inbounds', '@safe', '@zeros',
      \ '@parallel', '@inline']
let s:types = ['i64', 'i32', 'bool', 'f64', 'f32', 'fixed', 'ulog', 'complex']
let s:constants = ['pi', 'inf', 'nan']
let s:instructions = ['SWAP', 'NEG', 'INC', 'DEC', 'FLIP', 'CONJ', 'ROT', 'IROT',
      \ 'HADAMARD', 'PUSH', 'POP']
let s:builtins = ['sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh',
      \ 'exp', 'log', 'log1p', 'expm1', 'sqrt', 'cbrt', 'abs', 'abs2', 'angle', 'real',
      \ 'imag', 'conj', 'min', 'max', 'floor', 'ceil', 'round', 'sign', 'hypot',
      \ 'length', 'size', 'zero', 'one', 'zeros', 'stack', 'print', 'show', 'assert']

" A name: letters (Greek included), digits and `_`, optionally one trailing `!`.
let s:name = '[A-Za-z_α-ωΑ-Ω][A-Za-z0-9_α-ωΑ-Ω]*'

" Operators first: for matches that start at the same column the last defined wins,
" so `<=>`, `<-`, `->` and `+=` (defined later) beat `<=`, `<`, `-` and `+`.
syn match revOperator "==\|!=\|≠\|<=\|≤\|>=\|≥\|<<\|>>\|&&\|||\|\*\*\|//\|[-+*/%÷<>!&|^⊻~=]"
syn match revReversibleOp "<=>\|↔\|<-\|←\|->\|→\|[-+*/^]=\|⊻="
" `~` inverts what follows when that is @routine, @zeros, begin or a call
execute 'syn match revReversibleOp "\~\ze\s*\%(@\|begin\>\|' . s:name . '!\=\s*(\)"'

execute 'syn match revMutated "\<' . s:name . '!=\@!"'
execute 'syn match revFunctionCall "\<' . s:name . '\%(!=\@!\)\=\ze\s*("'
execute 'syn match revBuiltin "\<\%(' . join(s:builtins, '\|') . '\)\ze\s*("'
execute 'syn match revInstruction "\<\%(' . join(s:instructions, '\|') . '\)\ze\s*("'
execute 'syn match revFunctionName "' . s:name . '!\=" contained'

syn match revNumber "\<\d[0-9_]*\%(\.\d[0-9_]*\)\=\%([eE][+-]\=\d\+\)\=\%(im\)\=\>"
syn match revNumber "\<0[xX]\x[0-9a-fA-F_]*\>"

syn match revAnnotationError "@\h\w*"
execute 'syn match revAnnotation "\%(' . join(s:annotations, '\|') . '\)\>"'

execute 'syn keyword revConditional ' . join(s:conditionals)
execute 'syn keyword revRepeat ' . join(s:loops)
execute 'syn keyword revKeyword ' . join(s:keywords)
execute 'syn keyword revKeyword ' . join(s:functions) . ' nextgroup=revFunctionName skipwhite'
execute 'syn keyword revInclude ' . join(s:includes)
execute 'syn keyword revBoolean ' . join(s:booleans)
execute 'syn keyword revType ' . join(s:types)
execute 'syn keyword revConstant ' . join(s:constants)

syn match revEscape "\\." contained
syn region revString start=+"+ skip=+\\.+ end=+"+ end=+$+ contains=revEscape
syn keyword revTodo TODO FIXME XXX NOTE contained
syn match revComment "#.*$" contains=revTodo,@Spell

hi def link revConditional Conditional
hi def link revRepeat Repeat
hi def link revKeyword Keyword
hi def link revInclude Include
hi def link revBoolean Boolean
hi def link revAnnotation PreProc
hi def link revAnnotationError Error
hi def link revType Type
hi def link revConstant Constant
hi def link revNumber Number
hi def link revString String
hi def link revEscape SpecialChar
hi def link revComment Comment
hi def link revTodo Todo
hi def link revBuiltin Function
hi def link revInstruction Special
hi def link revFunctionName Function
hi def link revFunctionCall Identifier
hi def link revMutated Identifier
hi def link revOperator Operator
hi def link revReversibleOp Statement

let b:current_syntax = 'rev'
let &cpo = s:cpo_save
unlet s:cpo_save
