" rev (rlang) source files
autocmd BufNewFile,BufRead *.rev setfiletype rev
