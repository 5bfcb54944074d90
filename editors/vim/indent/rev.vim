" Vim indent file for rev, the reversible language of rlang (*.rev).
"
" A line is indented by 'shiftwidth' per block opened by the statement above it
" (function, if, while, for, from, begin; else, elseif and loop re-open the block they
" close), and dedented when it starts with end, else, elseif, until or loop.  A line
" inside an unclosed ( [ or { is aligned just after that bracket.
if exists('b:did_indent')
  finish
endif
let b:did_indent = 1

setlocal indentexpr=GetRevIndent(v:lnum)
setlocal indentkeys=0),0],0},!^F,o,O,0=end,0=else,0=elseif,0=until,0=loop
setlocal autoindent
let b:undo_indent = 'setlocal indentexpr< indentkeys< autoindent<'

if exists('*GetRevIndent')
  finish
endif
let s:cpo_save = &cpo
set cpo&vim

let s:openers = ['function', 'if', 'while', 'for', 'from', 'begin']
let s:closers = ['end', 'until']
let s:reopeners = ['else', 'elseif', 'loop']
let s:dedent_line = '^\s*\%(end\|else\|elseif\|until\|loop\)\>'
" How far back to look for an unclosed bracket (a statement never spans more).
let s:bracket_reach = 100

" The code of line lnum: strings blanked to x's of the same length, comment removed.
function! s:Code(lnum) abort
  let text = substitute(getline(a:lnum), '"\%([^"\\]\|\\.\)*"',
        \ '\=repeat("x", strlen(submatch(0)))', 'g')
  return substitute(text, '#.*$', '', '')
endfunction

" True when the cursor is on a bracket inside a string or a comment.
function! s:Ignored() abort
  return s:Code(line('.'))[col('.') - 1] !~# '[][(){}]'
endfunction

" [line, byte column] of the innermost bracket left open before line lnum, or [0, 0].
" The search stops at the function's first line: a statement does not span two.
function! s:OpenBracket(lnum) abort
  call cursor(a:lnum, 1)
  let stop = search('^\s*\%(@\h\w*\s\+\)*function\>', 'bnW')
  let stop = max([stop, a:lnum - s:bracket_reach, 1])
  return searchpairpos('[[({]', '', '[])}]', 'bnW', function('s:Ignored'), stop)
endfunction

" Blocks opened (positive) or closed (negative) by the statement in lines first..last;
" a closer or re-opener that starts the statement was already counted by dedenting it.
function! s:BlockDelta(first, last) abort
  let code = join(map(range(a:first, a:last), 's:Code(v:val)'), ' ')
  let words = split(code, '[^A-Za-z0-9_α-ωΑ-Ω]\+')
  let delta = 0
  for i in range(len(words))
    let word = words[i]
    if index(s:openers, word, 0, 0) >= 0
      let delta += 1
    elseif index(s:closers, word, 0, 0) >= 0 && i > 0
      let delta -= 1
    elseif index(s:reopeners, word, 0, 0) >= 0 && i == 0
      let delta += 1
    endif
  endfor
  return delta
endfunction

" The last line above lnum that holds code (not blank, not only a comment).
function! s:PrevCodeLine(lnum) abort
  let lnum = prevnonblank(a:lnum - 1)
  while lnum > 0 && getline(lnum) =~# '^\s*#'
    let lnum = prevnonblank(lnum - 1)
  endwhile
  return lnum
endfunction

function! GetRevIndent(lnum) abort
  let bracket = s:OpenBracket(a:lnum)
  if bracket[0] > 0
    return virtcol(bracket)
  endif
  let last = s:PrevCodeLine(a:lnum)
  if last == 0
    return 0
  endif
  " the statement that ends on line `last` starts where its outermost bracket opened
  let first = last
  let bracket = s:OpenBracket(first)
  while bracket[0] > 0
    let first = bracket[0]
    let bracket = s:OpenBracket(first)
  endwhile
  let ind = indent(first) + shiftwidth() * s:BlockDelta(first, last)
  if getline(a:lnum) =~# s:dedent_line
    let ind -= shiftwidth()
  endif
  return max([ind, 0])
endfunction

let &cpo = s:cpo_save
unlet s:cpo_save
