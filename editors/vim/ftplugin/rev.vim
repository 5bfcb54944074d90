" Vim filetype plugin for rev, the reversible language of rlang.
if exists('b:did_ftplugin')
  finish
endif
let b:did_ftplugin = 1

setlocal comments=:#
setlocal commentstring=#\ %s
setlocal shiftwidth=4 softtabstop=4 expandtab
" `y!` is one name: a trailing `!` marks an argument that the function mutates
setlocal iskeyword+=!
setlocal formatoptions-=t formatoptions+=croql

" matchit: % jumps between the keywords of one block
let b:match_ignorecase = 0
let b:match_words =
      \ '\<\%(function\|if\|while\|for\|begin\)\>:\<\%(elseif\|else\)\>:\<end\>,' .
      \ '\<from\>:\<do\>:\<loop\>:\<until\>'
let b:match_skip = 'synIDattr(synID(line("."), col("."), 1), "name") =~# "revComment\\|revString"'

let b:undo_ftplugin = 'setlocal comments< commentstring< shiftwidth< softtabstop< expandtab<'
      \ . ' iskeyword< formatoptions< | unlet! b:match_ignorecase b:match_words b:match_skip'
