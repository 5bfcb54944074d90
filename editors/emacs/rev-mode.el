;;; rev-mode.el --- Major mode for rev, the reversible language of rlang -*- lexical-binding: t -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "26.1"))
;; Keywords: languages
;; URL: https://github.com/rlang/rlang (editors/emacs)

;;; Commentary:

;; Syntax highlighting, indentation and comments for rev source files (*.rev).
;;
;; Install: put this file on `load-path' and add (require 'rev-mode) to your init
;; file; *.rev files then open in `rev-mode'.
;;
;; The word lists below are tested against grammar/rev.lark and rlang/primitives.py
;; (tests/editors/test_word_lists.py).  Indentation: one `rev-indent-offset' per
;; block opened by the statement above (function, if, while, for, from, begin; else,
;; elseif and loop re-open the block they close); a line starting with end, else,
;; elseif, until or loop is dedented; a line inside an unclosed bracket is aligned
;; just after it.

;;; Code:

(defgroup rev nil
  "Major mode for rev, the reversible programming language of rlang."
  :group 'languages
  :prefix "rev-")

(defcustom rev-indent-offset 4
  "Number of columns of one indentation level in rev code."
  :type 'integer
  :safe #'integerp)

(defconst rev-keywords
  '("function" "end" "if" "elseif" "else" "while" "from" "do" "loop" "until" "for"
    "begin" "const" "include" "wrt" "into")
  "Keywords of rev, other than the booleans.")

(defconst rev-booleans '("true" "false")
  "Boolean literals of rev.")

(defconst rev-annotations
  '("@routine" "@invcheckoff" "@inbounds" "@safe" "@zeros" "@parallel" "@inline")
  "Annotations of rev.")

(defconst rev-types
  '("i64" "i32" "bool" "f64" "f32" "fixed" "ulog" "complex")
  "Scalar types of rev; each is also a conversion function.")

(defconst rev-constants '("pi" "inf" "nan")
  "Named constants of rev expressions.")

(defconst rev-instructions
  '("SWAP" "NEG" "INC" "DEC" "FLIP" "CONJ" "ROT" "IROT" "HADAMARD" "PUSH" "POP")
  "Reversible instructions of rev.")

(defconst rev-builtins
  '("sin" "cos" "tan" "asin" "acos" "atan" "sinh" "cosh" "tanh" "exp" "log" "log1p"
    "expm1" "sqrt" "cbrt" "abs" "abs2" "angle" "real" "imag" "conj" "min" "max"
    "floor" "ceil" "round" "sign" "hypot" "length" "size" "zero" "one" "zeros"
    "stack" "print" "show" "assert")
  "Built-in functions of rev expressions and of @safe statements.")

(defface rev-instruction-face '((t :inherit font-lock-builtin-face :weight bold))
  "Face of the reversible instructions (SWAP, ROT, ...).")

(defface rev-function-call-face '((t :inherit font-lock-function-name-face))
  "Face of the name in a call of a user function.")

(defface rev-mutated-face '((t :inherit font-lock-variable-name-face))
  "Face of names ending in `!', the arguments a function mutates.")

(defface rev-reversible-operator-face '((t :inherit font-lock-keyword-face))
  "Face of the reversible updates (+= <- -> <=> ...) and of the inverse `~'.")

(defface rev-operator-face '((t :inherit default))
  "Face of the other operators.")

(defconst rev--name "[A-Za-z_α-ωΑ-Ω][A-Za-z0-9_α-ωΑ-Ω]*"
  "A rev name without its optional trailing `!'.")

(defun rev--words (words)
  "A regexp matching any of WORDS as a whole symbol."
  (regexp-opt words 'symbols))

(defun rev--called (words)
  "A regexp for a call of any of WORDS; its group 1 is the name."
  (concat "\\(" (regexp-opt words 'symbols) "\\)[ \t]*("))

(defconst rev-font-lock-keywords
  ;; Earlier rules win: a later rule does not refontify text that already has a face.
  `((,(concat "\\_<function[ \t]+\\(" rev--name "!?\\)") 1 font-lock-function-name-face)
    (,(rev--words rev-annotations) . font-lock-preprocessor-face)
    ("@[A-Za-z_][A-Za-z0-9_]*" . font-lock-warning-face)
    (,(rev--words rev-keywords) . font-lock-keyword-face)
    (,(rev--words rev-booleans) . font-lock-constant-face)
    (,(rev--words rev-types) . font-lock-type-face)
    (,(rev--words rev-constants) . font-lock-constant-face)
    (,(rev--called rev-instructions) 1 'rev-instruction-face)
    (,(rev--called rev-builtins) 1 font-lock-builtin-face)
    (,(concat "\\_<\\(" rev--name "!?\\)[ \t]*(") 1 'rev-function-call-face)
    (,(concat "\\_<\\(" rev--name "!\\)\\(?:[^=]\\|$\\)") 1 'rev-mutated-face)
    ;; numbers: imaginary, hexadecimal, float, integer
    ("\\_<[0-9][0-9_]*\\(?:\\.[0-9][0-9_]*\\)?\\(?:[eE][-+]?[0-9]+\\)?im\\_>"
     . font-lock-constant-face)
    ("\\_<0[xX][0-9a-fA-F][0-9a-fA-F_]*\\_>" . font-lock-constant-face)
    ("\\_<[0-9][0-9_]*\\(?:\\.[0-9][0-9_]*\\)?\\(?:[eE][-+]?[0-9]+\\)?"
     . font-lock-constant-face)
    ;; `~' inverts what follows when that is @routine, @zeros, begin or a call
    (,(concat "\\(~\\)[ \t]*\\(?:@\\|begin\\_>\\|" rev--name "!?[ \t]*(\\)")
     1 'rev-reversible-operator-face)
    ("<=>\\|↔\\|<-\\|←\\|->\\|→\\|[-+*/^]=\\|⊻=" . 'rev-reversible-operator-face)
    ("==\\|!=\\|≠\\|<=\\|≤\\|>=\\|≥\\|<<\\|>>\\|&&\\|||\\|\\*\\*\\|//\\|[-+*/%÷<>!&|^⊻~=]"
     . 'rev-operator-face))
  "Highlighting of rev: the categories of the VS Code grammar, one face each.")

(defvar rev-mode-syntax-table
  (let ((table (make-syntax-table)))
    (modify-syntax-entry ?# "<" table)
    (modify-syntax-entry ?\n ">" table)
    (modify-syntax-entry ?\" "\"" table)
    (modify-syntax-entry ?\\ "\\" table)
    (modify-syntax-entry ?_ "_" table)
    (modify-syntax-entry ?@ "_" table)
    (dolist (char (string-to-list "!~+-*/%^&|<>=:;,.←→↔⊻≠≤≥÷"))
      (modify-syntax-entry char "." table))
    table)
  "Syntax table of `rev-mode': # comments, \"strings\", names with `_' and `@'.")

;;; Indentation

(defconst rev--openers '("function" "if" "while" "for" "from" "begin")
  "Keywords that open a block.")

(defconst rev--closers '("end" "until")
  "Keywords that close a block.")

(defconst rev--reopeners '("else" "elseif" "loop")
  "Keywords that close a block and open the next one.")

(defconst rev--dedent-line-regexp
  (concat "[ \t]*" (regexp-opt (append rev--closers rev--reopeners) 'symbols))
  "A line that starts with a keyword ending a block.")

(defun rev--open-bracket (&optional pos)
  "Position of the innermost bracket left open at POS (default: point), or nil."
  (nth 1 (syntax-ppss pos)))

(defun rev--statement-start ()
  "Move to the start of the line where the statement containing point starts."
  (let (bracket)
    (while (setq bracket (nth 1 (syntax-ppss (line-beginning-position))))
      (goto-char bracket)))
  (beginning-of-line))

(defun rev--previous-code-line ()
  "Move to the last line above point holding code; nil at the top of the buffer."
  (let (found)
    (while (and (not found) (= 0 (forward-line -1)))
      (unless (looking-at-p "[ \t]*\\(?:#.*\\)?$")
        (setq found t)))
    found))

(defun rev--block-delta (start end)
  "Blocks opened (positive) or closed (negative) from START to END.
START..END is one statement.  A closer or re-opener that starts the
statement is not counted here: its own line was dedented instead."
  (let ((delta 0)
        (word-regexp (rev--words (append rev--openers rev--closers rev--reopeners)))
        (first-word (save-excursion (goto-char start) (skip-chars-forward " \t") (point))))
    (save-excursion
      (goto-char start)
      (while (re-search-forward word-regexp end t)
        (unless (nth 8 (save-excursion (syntax-ppss (match-beginning 0))))
          (let ((word (match-string-no-properties 0))
                (first (= (match-beginning 0) first-word)))
            (cond ((member word rev--openers) (setq delta (1+ delta)))
                  ((member word rev--closers) (unless first (setq delta (1- delta))))
                  ((and first (member word rev--reopeners)) (setq delta (1+ delta))))))))
    delta))

(defun rev-calculate-indentation ()
  "The column to which the current line of rev code should be indented."
  (save-excursion
    (beginning-of-line)
    (let ((bracket (rev--open-bracket))
          (dedent (if (looking-at-p rev--dedent-line-regexp) rev-indent-offset 0)))
      (cond
       (bracket (goto-char bracket) (1+ (current-column)))
       ((not (rev--previous-code-line)) 0)
       (t (let ((end (line-end-position)))
            (rev--statement-start)
            (max 0 (- (+ (current-indentation)
                         (* rev-indent-offset (rev--block-delta (point) end)))
                      dedent))))))))

(defun rev-indent-line ()
  "Indent the current line of rev code."
  (interactive)
  (let ((column (rev-calculate-indentation)))
    (if (<= (current-column) (current-indentation))
        (indent-line-to column)
      (save-excursion (indent-line-to column)))))

;;;###autoload
(define-derived-mode rev-mode prog-mode "rev"
  "Major mode for editing rev, the reversible programming language of rlang.

\\{rev-mode-map}"
  :syntax-table rev-mode-syntax-table
  (setq-local comment-start "# ")
  (setq-local comment-start-skip "#+[ \t]*")
  (setq-local comment-end "")
  (setq-local indent-line-function #'rev-indent-line)
  (setq-local indent-tabs-mode nil)
  (setq-local electric-indent-chars
              (append electric-indent-chars '(?d ?e ?f ?p ?l)))
  (setq-local font-lock-defaults '(rev-font-lock-keywords)))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.rev\\'" . rev-mode))

(provide 'rev-mode)
;;; rev-mode.el ends here
