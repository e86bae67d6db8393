//! Shell scripts: parsed with brush-parser, every node walked.
//!
//! Each simple command becomes a list of [`Arg`]s checked like an argv (name, wrappers,
//! builtins). Around commands the walk checks what else can run or write: command and process
//! substitutions (walked as scripts), here-documents that expand, parameter expansions that
//! evaluate code (`${!x}`, `${x@P}`), arithmetic, assignments to protected variables, `[[ ]]`
//! tests, and redirection targets (workspace-relative paths, `/dev/null` or file descriptors).

use brush_parser::ast::{
    AndOr, AndOrList, Assignment, AssignmentName, AssignmentValue, BinaryPredicate, Command, CommandPrefixOrSuffixItem,
    CompoundCommand, CompoundList, ExtendedTestExpr, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect, Pipeline,
    RedirectList, SimpleCommand, UnaryPredicate, Word,
};
use brush_parser::word::{Parameter, ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource};

use super::argv::{check_variable_name, protected_variable, refuse, too_deep, Arg, Checker};
use super::names::{self, DEVICE_TARGETS};
use super::grammar::{self, Grammar};
use super::words::{self, arith_text_safe, Dynamic, WordInfo};
use super::{Check, RefuseReason, MAX_NESTING, MAX_SCRIPT_OPENERS, SCRIPT_STACK_BYTES};

#[derive(Clone, Copy)]
struct Ctx {
    depth: usize,
    /// The grammar of the shell that runs the script (zsh's glob qualifiers can run code).
    grammar: Grammar,
    /// Inside a command or process substitution, where here-documents are refused.
    in_substitution: bool,
}

/// Words that open a nesting level in the grammar.
const OPENING_KEYWORDS: &[&str] = &["if", "while", "until", "for", "case", "select", "coproc", "function"];

/// Refuses scripts the parser could not handle safely: too many nesting constructs (its
/// recursion depth is bounded by their number), and file-descriptor numbers that overflow.
fn prescan(text: &str) -> Check {
    // The tokenizer removes line continuations before anything else.
    let joined = text.replace("\\\n", "");
    let bytes = joined.as_bytes();
    let mut openers = bytes.iter().filter(|b| matches!(b, b'(' | b'{' | b'[' | b'`' | b'!')).count();
    openers += joined
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>'))
        .filter(|token| OPENING_KEYWORDS.contains(token))
        .count();
    if openers > MAX_SCRIPT_OPENERS {
        return Err(refuse(
            text,
            RefuseReason::TooComplex,
            format!("the script has more than {MAX_SCRIPT_OPENERS} nesting constructs (brackets, braces, !, if, while, case...); split it into simpler commands"),
        ));
    }
    let mut run = 0usize;
    for &b in bytes {
        if b.is_ascii_digit() {
            run += 1;
            continue;
        }
        if run >= 10 && matches!(b, b'<' | b'>') {
            return Err(refuse(text, RefuseReason::ParseError, "a file descriptor number before a redirection is too large; use a small number such as 2>&1"));
        }
        run = 0;
    }
    Ok(())
}

fn parse_program(text: &str) -> Check<brush_parser::ast::Program> {
    let mut parser = brush_parser::Parser::new(std::io::Cursor::new(text.as_bytes()), &words::options());
    parser.parse_program().map_err(|e| {
        refuse(
            text,
            RefuseReason::ParseError,
            format!("the script does not parse as a shell script ({e}); fix its syntax, or pass the program and its arguments as separate argv items without a shell"),
        )
    })
}

fn arithmetic_refusal(node: &str) -> super::Refusal {
    refuse(
        node,
        RefuseReason::Arithmetic,
        "arithmetic may only use literal numbers, $?, $# and operators: bash evaluates variables in arithmetic as code; compute with expr or awk, or use literal numbers",
    )
}

fn redirect_operator(kind: &IoFileRedirectKind) -> &'static str {
    match kind {
        IoFileRedirectKind::Read => "<",
        IoFileRedirectKind::Write => ">",
        IoFileRedirectKind::Append => ">>",
        IoFileRedirectKind::ReadAndWrite => "<>",
        IoFileRedirectKind::Clobber => ">|",
        IoFileRedirectKind::DuplicateInput => "<&",
        IoFileRedirectKind::DuplicateOutput => ">&",
    }
}

impl Checker<'_> {
    /// Checks a shell script: every command it can run, every file it can redirect to.
    pub(crate) fn check_script(&mut self, text: &str, depth: usize, grammar: Grammar) -> Check {
        self.check_script_in(text, depth, grammar, false)
    }

    fn check_script_in(&mut self, text: &str, depth: usize, grammar: Grammar, in_substitution: bool) -> Check {
        if self.on_script_stack {
            return self.check_script_here(text, depth, grammar, in_substitution);
        }
        // The first script moves the check to a stack sized for the parser's recursion.
        self.on_script_stack = true;
        let result = stacker::grow(SCRIPT_STACK_BYTES, || self.check_script_here(text, depth, grammar, in_substitution));
        self.on_script_stack = false;
        result
    }

    fn check_script_here(&mut self, text: &str, depth: usize, grammar: Grammar, in_substitution: bool) -> Check {
        if depth > MAX_NESTING {
            return Err(too_deep(text));
        }
        prescan(text)?;
        // Linear, and first: it also bounds the parser's work on nested quoting.
        grammar::scan(text, grammar)?;
        let program = parse_program(text)?;
        let ctx = Ctx { depth, grammar, in_substitution };
        let outer = std::mem::replace(&mut self.grammar, grammar);
        let result = program.complete_commands.iter().try_for_each(|list| self.walk_list(list, ctx));
        self.grammar = outer;
        result
    }

    fn walk_list(&mut self, list: &CompoundList, ctx: Ctx) -> Check {
        for item in &list.0 {
            self.walk_and_or(&item.0, ctx)?;
        }
        Ok(())
    }

    fn walk_and_or(&mut self, list: &AndOrList, ctx: Ctx) -> Check {
        self.walk_pipeline(&list.first, ctx)?;
        for next in &list.additional {
            match next {
                AndOr::And(p) | AndOr::Or(p) => self.walk_pipeline(p, ctx)?,
            }
        }
        Ok(())
    }

    fn walk_pipeline(&mut self, pipeline: &Pipeline, ctx: Ctx) -> Check {
        if pipeline.timed.is_some() && ctx.grammar == Grammar::Posix {
            // In a POSIX shell `time` is no keyword: it is the program found on PATH.
            self.check_argv(&[Arg::literal("time")], ctx.depth)?;
        }
        for command in &pipeline.seq {
            self.walk_command(command, ctx)?;
        }
        Ok(())
    }

    fn walk_command(&mut self, command: &Command, ctx: Ctx) -> Check {
        match command {
            Command::Simple(simple) => self.walk_simple(simple, ctx),
            Command::Compound(compound, redirects) => {
                self.walk_compound(compound, ctx)?;
                self.walk_redirect_list(redirects.as_ref(), ctx)
            }
            Command::Function(function) => {
                self.walk_compound(&function.body.0, ctx)?;
                self.walk_redirect_list(function.body.1.as_ref(), ctx)
            }
            Command::ExtendedTest(test, redirects) => {
                self.walk_extended_test(&test.expr, ctx)?;
                self.walk_redirect_list(redirects.as_ref(), ctx)
            }
        }
    }

    fn walk_compound(&mut self, compound: &CompoundCommand, ctx: Ctx) -> Check {
        match compound {
            CompoundCommand::Arithmetic(arith) => {
                if !arith_text_safe(&arith.expr.value) {
                    return Err(arithmetic_refusal(&format!("(({}))", arith.expr.value)));
                }
                Ok(())
            }
            CompoundCommand::ArithmeticForClause(clause) => {
                for part in [&clause.initializer, &clause.condition, &clause.updater].into_iter().flatten() {
                    if !arith_text_safe(&part.value) {
                        return Err(arithmetic_refusal(&format!("for (({}))", part.value)));
                    }
                }
                self.walk_list(&clause.body.list, ctx)
            }
            CompoundCommand::BraceGroup(group) => self.walk_list(&group.list, ctx),
            CompoundCommand::Subshell(subshell) => self.walk_list(&subshell.list, ctx),
            CompoundCommand::ForClause(clause) => {
                let node = format!("for {}", clause.variable_name);
                check_variable_name(&node, &clause.variable_name, "the loop variable")?;
                for value in clause.values.iter().flatten() {
                    self.walk_word(value, ctx)?;
                }
                self.walk_list(&clause.body.list, ctx)
            }
            CompoundCommand::CaseClause(clause) => {
                self.walk_word(&clause.value, ctx)?;
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        self.walk_word(pattern, ctx)?;
                    }
                    if let Some(list) = &item.cmd {
                        self.walk_list(list, ctx)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::IfClause(clause) => {
                self.walk_list(&clause.condition, ctx)?;
                self.walk_list(&clause.then, ctx)?;
                for branch in clause.elses.iter().flatten() {
                    if let Some(condition) = &branch.condition {
                        self.walk_list(condition, ctx)?;
                    }
                    self.walk_list(&branch.body, ctx)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
                self.walk_list(&clause.0, ctx)?;
                self.walk_list(&clause.1.list, ctx)
            }
            CompoundCommand::Coprocess(coprocess) => self.walk_command(&coprocess.body, ctx),
        }
    }

    fn walk_simple(&mut self, simple: &SimpleCommand, ctx: Ctx) -> Check {
        let outer = std::mem::take(&mut self.local_fds);
        let result = self.walk_simple_here(simple, ctx);
        let opened = std::mem::replace(&mut self.local_fds, outer);
        let is_exec = simple.word_or_name.as_ref().is_some_and(|w| w.value == "exec");
        if result.is_ok() && is_exec {
            // `exec 3>file` keeps descriptor 3 open for the rest of the script.
            self.exec_fds.extend(opened);
        }
        result
    }

    fn walk_simple_here(&mut self, simple: &SimpleCommand, ctx: Ctx) -> Check {
        let mut args: Vec<Arg> = Vec::new();
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            self.walk_item(item, &mut args, ctx)?;
        }
        if let Some(name) = &simple.word_or_name {
            args.push(self.word_arg(name, ctx)?);
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            self.walk_item(item, &mut args, ctx)?;
        }
        if args.is_empty() {
            return Ok(());
        }
        self.check_argv(&args, ctx.depth)
    }

    fn walk_item(&mut self, item: &CommandPrefixOrSuffixItem, args: &mut Vec<Arg>, ctx: Ctx) -> Check {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.walk_redirect(redirect, ctx),
            CommandPrefixOrSuffixItem::Word(word) => {
                let arg = self.word_arg(word, ctx)?;
                args.push(arg);
                Ok(())
            }
            CommandPrefixOrSuffixItem::AssignmentWord(assignment, word) => {
                if args.is_empty() {
                    // Before the command name: an assignment (to the environment of the command).
                    return self.walk_assignment(assignment, &word.value, ctx);
                }
                if !is_declaration(args) {
                    // `make CC=gcc`: an ordinary argument that happens to contain `=`.
                    let arg = self.word_arg(word, ctx)?;
                    args.push(arg);
                    return Ok(());
                }
                // `export A=$x`: the declaration builtin assigns it.
                self.walk_assignment(assignment, &word.value, ctx)?;
                let pieces = words::parse(&word.value)?;
                args.push(Arg { raw: word.value.clone(), info: words::analyse(&pieces), assignment: true });
                Ok(())
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                self.walk_nested_list(&subshell.list, ctx)?;
                if !args.is_empty() {
                    args.push(Arg {
                        raw: "<(...)".to_string(),
                        info: WordInfo {
                            value: Err(Dynamic::Substitution),
                            single_field: true,
                            numeric_safe: false,
                            static_prefix: String::new(),
                        },
                        assignment: false,
                    });
                }
                Ok(())
            }
        }
    }

    fn walk_nested_list(&mut self, list: &CompoundList, ctx: Ctx) -> Check {
        if ctx.depth + 1 > MAX_NESTING {
            return Err(too_deep("<(...)"));
        }
        self.walk_list(list, Ctx { depth: ctx.depth + 1, in_substitution: true, ..ctx })
    }

    fn walk_assignment(&mut self, assignment: &Assignment, raw: &str, ctx: Ctx) -> Check {
        match &assignment.name {
            AssignmentName::VariableName(name) => check_variable_name(raw, name, "the assigned variable")?,
            AssignmentName::ArrayElementName(name, index) => {
                check_variable_name(raw, name, "the assigned variable")?;
                if !arith_text_safe(index) {
                    return Err(arithmetic_refusal(raw));
                }
            }
        }
        match &assignment.value {
            AssignmentValue::Scalar(word) => self.walk_word(word, ctx).map(drop),
            AssignmentValue::Array(items) => {
                for (key, value) in items {
                    if let Some(key) = key {
                        if !arith_text_safe(&key.value) {
                            return Err(arithmetic_refusal(raw));
                        }
                    }
                    self.walk_word(value, ctx)?;
                }
                Ok(())
            }
        }
    }

    fn walk_redirect_list(&mut self, list: Option<&RedirectList>, ctx: Ctx) -> Check {
        let outer = std::mem::take(&mut self.local_fds);
        let result = list.iter().flat_map(|l| l.0.iter()).try_for_each(|redirect| self.walk_redirect(redirect, ctx));
        self.local_fds = outer;
        result
    }

    /// A duplication of descriptor `fd` (`>&fd`, `<&fd`): above 2 it must be one the script
    /// opened itself, not one the shell inherited from its parent.
    fn check_duplicated_fd(&self, node: &str, fd: i64) -> Check {
        if fd <= 2 || self.local_fds.iter().chain(&self.exec_fds).any(|&open| i64::from(open) == fd) {
            return Ok(());
        }
        Err(refuse(
            node,
            RefuseReason::Descriptor,
            format!("descriptor {fd} is not one the script opened; a descriptor above 2 is only usable after the script opens it (exec {fd}>out.txt), or use 1 and 2"),
        ))
    }

    /// Records the descriptor a redirection opens (`3>file`, `4>&1`, `5<<EOF`).
    fn opened_fd(&mut self, fd: Option<&brush_parser::ast::IoFd>) {
        if let Some(&fd) = fd {
            if fd > 2 {
                self.local_fds.push(fd);
            }
        }
    }

    fn walk_redirect(&mut self, redirect: &IoRedirect, ctx: Ctx) -> Check {
        self.walk_redirect_here(redirect, ctx)?;
        match redirect {
            IoRedirect::File(fd, _, _) | IoRedirect::HereDocument(fd, _) | IoRedirect::HereString(fd, _) => self.opened_fd(fd.as_ref()),
            IoRedirect::OutputAndError(..) => {}
        }
        Ok(())
    }

    fn walk_redirect_here(&mut self, redirect: &IoRedirect, ctx: Ctx) -> Check {
        match redirect {
            IoRedirect::File(_, kind, target) => match target {
                IoFileRedirectTarget::Filename(word) => self.redirect_target(redirect_operator(kind), word, ctx),
                IoFileRedirectTarget::Fd(fd) => self.check_duplicated_fd(&format!("{}{fd}", redirect_operator(kind)), i64::from(*fd)),
                IoFileRedirectTarget::ProcessSubstitution(_, subshell) => self.walk_nested_list(&subshell.list, ctx),
                IoFileRedirectTarget::Duplicate(word) => {
                    let pieces = words::parse(&word.value)?;
                    self.walk_pieces(&pieces, ctx)?;
                    match words::analyse(&pieces).value {
                        // `-` closes.
                        Ok(v) if v == "-" => Ok(()),
                        Ok(v) if is_fd_word(&v) => {
                            let fd = v.trim_end_matches('-').parse::<i64>().unwrap_or(i64::MAX);
                            self.check_duplicated_fd(&format!("{}{v}", redirect_operator(kind)), fd)
                        }
                        // `>&file` is bash for `&>file`.
                        Ok(_) => self.redirect_target(redirect_operator(kind), word, ctx),
                        Err(_) => Err(refuse(
                            &format!("{}{}", redirect_operator(kind), word.value),
                            RefuseReason::RedirectTarget,
                            "a file descriptor duplication must be a literal number, such as 2>&1",
                        )),
                    }
                }
            },
            IoRedirect::HereDocument(_, doc) => {
                if ctx.in_substitution {
                    return Err(refuse(
                        &format!("<<{}", doc.here_end.value),
                        RefuseReason::HereDocument,
                        "a here-document inside $(...), backticks or <(...) ends where bash's own reading of the substitution says, which the policy cannot follow; write the text to a file with write_file, or move the here-document to the top level of the script",
                    ));
                }
                check_heredoc_lines(doc)?;
                if doc.requires_expansion {
                    let pieces = words::parse_heredoc(&doc.doc.value)?;
                    self.walk_pieces(&pieces, ctx)?;
                }
                Ok(())
            }
            IoRedirect::HereString(_, word) => self.walk_word(word, ctx).map(drop),
            IoRedirect::OutputAndError(word, append) => self.redirect_target(if *append { "&>>" } else { "&>" }, word, ctx),
        }
    }

    fn redirect_target(&mut self, operator: &str, word: &Word, ctx: Ctx) -> Check {
        let pieces = words::parse(&word.value)?;
        self.walk_pieces(&pieces, ctx)?;
        let node = format!("{operator} {}", word.value);
        let hint = "redirect only to a relative path inside the workspace, such as out.txt or logs/build.log, or to /dev/null";
        match words::analyse(&pieces).value {
            Ok(target) => {
                if DEVICE_TARGETS.contains(&target.as_str()) || crate::path::parse(&target).is_ok() {
                    Ok(())
                } else {
                    Err(refuse(&node, RefuseReason::RedirectTarget, format!("this target is outside the workspace or not a valid path; {hint}")))
                }
            }
            Err(kind) => Err(refuse(
                &node,
                RefuseReason::RedirectTarget,
                format!("the target is built from {} at run time; {hint}", kind.describe()),
            )),
        }
    }

    fn walk_extended_test(&mut self, expr: &ExtendedTestExpr, ctx: Ctx) -> Check {
        match expr {
            ExtendedTestExpr::And(a, b) | ExtendedTestExpr::Or(a, b) => {
                self.walk_extended_test(a, ctx)?;
                self.walk_extended_test(b, ctx)
            }
            ExtendedTestExpr::Not(a) | ExtendedTestExpr::Parenthesized(a) => self.walk_extended_test(a, ctx),
            ExtendedTestExpr::UnaryTest(predicate, word) => {
                let info = self.walk_word(word, ctx)?;
                if matches!(predicate, UnaryPredicate::ShellVariableIsSetAndAssigned | UnaryPredicate::ShellVariableIsSetAndNameRef) {
                    match info.static_value() {
                        Some(name) => check_variable_name(&word.value, name, "the operand of -v")?,
                        None => return Err(refuse(&word.value, RefuseReason::VariableName, "the operand of [[ -v ]] must be a literal variable name")),
                    }
                }
                Ok(())
            }
            ExtendedTestExpr::BinaryTest(predicate, left, right) => {
                let left_info = self.walk_word(left, ctx)?;
                let right_info = self.walk_word(right, ctx)?;
                let arithmetic = matches!(
                    predicate,
                    BinaryPredicate::ArithmeticEqualTo
                        | BinaryPredicate::ArithmeticNotEqualTo
                        | BinaryPredicate::ArithmeticLessThan
                        | BinaryPredicate::ArithmeticLessThanOrEqualTo
                        | BinaryPredicate::ArithmeticGreaterThan
                        | BinaryPredicate::ArithmeticGreaterThanOrEqualTo
                );
                if arithmetic {
                    for (word, info) in [(left, left_info), (right, right_info)] {
                        if !info.numeric_safe {
                            return Err(arithmetic_refusal(&word.value));
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// Parses and walks a word; returns what is known about it.
    fn walk_word(&mut self, word: &Word, ctx: Ctx) -> Check<WordInfo> {
        let pieces = words::parse(&word.value)?;
        self.walk_pieces(&pieces, ctx)?;
        Ok(words::analyse(&pieces))
    }

    fn word_arg(&mut self, word: &Word, ctx: Ctx) -> Check<Arg> {
        let info = self.walk_word(word, ctx)?;
        Ok(Arg { raw: word.value.clone(), info, assignment: false })
    }

    /// Walks the code inside a word: substitutions, parameter expansions, arithmetic.
    fn walk_pieces(&mut self, pieces: &[WordPieceWithSource], ctx: Ctx) -> Check {
        for (index, piece) in pieces.iter().enumerate() {
            match &piece.piece {
                WordPiece::Text(text) => {
                    if text.ends_with('$') {
                        if let Some(WordPiece::Text(next)) = pieces.get(index + 1).map(|p| &p.piece) {
                            if next.starts_with('{') {
                                return Err(refuse(
                                    &format!("${next}"),
                                    RefuseReason::ParseError,
                                    "this parameter expansion uses syntax the policy does not understand (such as zsh ${(flags)name}); use a plain ${name}",
                                ));
                            }
                        }
                    }
                    if ctx.grammar == Grammar::Zsh && text.contains('(') {
                        return Err(refuse(
                            text,
                            RefuseReason::DynamicCode,
                            "in zsh, glob qualifiers such as *(e:...:) and =(...) can run code; quote the text, or use sh or bash",
                        ));
                    }
                }
                WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => self.walk_pieces(inner, ctx)?,
                WordPiece::CommandSubstitution(script) | WordPiece::BackquotedCommandSubstitution(script) => {
                    self.check_script_in(script, ctx.depth + 1, ctx.grammar, true)?
                }
                WordPiece::ParameterExpansion(expr) => self.walk_parameter(expr, ctx)?,
                WordPiece::ArithmeticExpression(expr) => {
                    if !arith_text_safe(&expr.value) {
                        return Err(arithmetic_refusal(&format!("$(({}))", expr.value)));
                    }
                }
                WordPiece::SingleQuotedText(_)
                | WordPiece::AnsiCQuotedText(_)
                | WordPiece::TildeExpansion(_)
                | WordPiece::EscapeSequence(_) => {}
            }
        }
        Ok(())
    }

    fn walk_subword(&mut self, text: Option<&String>, ctx: Ctx) -> Check {
        if let Some(text) = text {
            let pieces = words::parse(text)?;
            self.walk_pieces(&pieces, ctx)?;
        }
        Ok(())
    }

    fn walk_parameter(&mut self, expr: &ParameterExpr, ctx: Ctx) -> Check {
        let (parameter, indirect) = match expr {
            ParameterExpr::Parameter { parameter, indirect }
            | ParameterExpr::UseDefaultValues { parameter, indirect, .. }
            | ParameterExpr::AssignDefaultValues { parameter, indirect, .. }
            | ParameterExpr::IndicateErrorIfNullOrUnset { parameter, indirect, .. }
            | ParameterExpr::UseAlternativeValue { parameter, indirect, .. }
            | ParameterExpr::ParameterLength { parameter, indirect }
            | ParameterExpr::RemoveSmallestSuffixPattern { parameter, indirect, .. }
            | ParameterExpr::RemoveLargestSuffixPattern { parameter, indirect, .. }
            | ParameterExpr::RemoveSmallestPrefixPattern { parameter, indirect, .. }
            | ParameterExpr::RemoveLargestPrefixPattern { parameter, indirect, .. }
            | ParameterExpr::Substring { parameter, indirect, .. }
            | ParameterExpr::Transform { parameter, indirect, .. }
            | ParameterExpr::UppercaseFirstChar { parameter, indirect, .. }
            | ParameterExpr::UppercasePattern { parameter, indirect, .. }
            | ParameterExpr::LowercaseFirstChar { parameter, indirect, .. }
            | ParameterExpr::LowercasePattern { parameter, indirect, .. }
            | ParameterExpr::ReplaceSubstring { parameter, indirect, .. } => (parameter, *indirect),
            ParameterExpr::VariableNames { .. } | ParameterExpr::MemberKeys { .. } => return Ok(()),
        };
        let name = parameter_name(parameter);
        if indirect {
            return Err(refuse(
                &format!("${{!{name}}}"),
                RefuseReason::DynamicCode,
                "indirect expansion ${!name} evaluates a value as a variable name, which can run code; use the variable directly",
            ));
        }
        if let Parameter::NamedWithIndex { index, .. } = parameter {
            if !arith_text_safe(index) {
                return Err(arithmetic_refusal(&format!("${{{name}}}")));
            }
        }
        match expr {
            ParameterExpr::UseDefaultValues { default_value: text, .. }
            | ParameterExpr::IndicateErrorIfNullOrUnset { error_message: text, .. }
            | ParameterExpr::UseAlternativeValue { alternative_value: text, .. }
            | ParameterExpr::RemoveSmallestSuffixPattern { pattern: text, .. }
            | ParameterExpr::RemoveLargestSuffixPattern { pattern: text, .. }
            | ParameterExpr::RemoveSmallestPrefixPattern { pattern: text, .. }
            | ParameterExpr::RemoveLargestPrefixPattern { pattern: text, .. }
            | ParameterExpr::UppercaseFirstChar { pattern: text, .. }
            | ParameterExpr::UppercasePattern { pattern: text, .. }
            | ParameterExpr::LowercaseFirstChar { pattern: text, .. }
            | ParameterExpr::LowercasePattern { pattern: text, .. } => self.walk_subword(text.as_ref(), ctx),
            ParameterExpr::AssignDefaultValues { default_value, .. } => {
                if let Parameter::Named(name) | Parameter::NamedWithIndex { name, .. } = parameter {
                    if names::is_protected_variable(name) {
                        return Err(protected_variable(&format!("${{{name}:=...}}"), name));
                    }
                }
                self.walk_subword(default_value.as_ref(), ctx)
            }
            ParameterExpr::ReplaceSubstring { pattern, replacement, .. } => {
                self.walk_subword(Some(pattern), ctx)?;
                self.walk_subword(replacement.as_ref(), ctx)
            }
            ParameterExpr::Substring { offset, length, .. } => {
                for part in std::iter::once(offset).chain(length.as_ref()) {
                    if !arith_text_safe(&part.value) {
                        return Err(arithmetic_refusal(&format!("${{{name}:{}}}", part.value)));
                    }
                }
                Ok(())
            }
            ParameterExpr::Transform { op: ParameterTransformOp::PromptExpand, .. } => Err(refuse(
                &format!("${{{name}@P}}"),
                RefuseReason::DynamicCode,
                "${name@P} expands a value like a prompt, running command substitutions in it; use the variable directly",
            )),
            _ => Ok(()),
        }
    }
}

/// Whether a command's name is a builtin that assigns its `NAME=value` arguments.
fn is_declaration(args: &[Arg]) -> bool {
    args[0]
        .value()
        .is_some_and(|name| matches!(name.to_ascii_lowercase().as_str(), "export" | "declare" | "typeset" | "local" | "readonly"))
}

/// A parameter's name for messages: `x`, `a[1]`, `@`.
fn parameter_name(parameter: &Parameter) -> String {
    match parameter {
        Parameter::Positional(n) => n.to_string(),
        Parameter::Special(special) => special.to_string(),
        Parameter::Named(name) => name.clone(),
        Parameter::NamedWithIndex { name, index } => format!("{name}[{index}]"),
        Parameter::NamedWithAllIndices { name, concatenate } => format!("{name}[{}]", if *concatenate { "*" } else { "@" }),
    }
}

/// `2`, `-` (close), `1-` (move).
fn is_fd_word(word: &str) -> bool {
    let digits = word.strip_suffix('-').unwrap_or(word);
    word == "-" || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Refuses a here-document whose body has a line starting with the closing word and going on
/// (`EOF)`, `EOF `): bash ends some bodies there, the parser does not.
fn check_heredoc_lines(doc: &brush_parser::ast::IoHereDocument) -> Check {
    let delimiter = match words::parse(&doc.here_end.value).map(|p| words::analyse(&p).value) {
        Ok(Ok(d)) => d,
        _ => {
            return Err(refuse(
                &format!("<<{}", doc.here_end.value),
                RefuseReason::HereDocument,
                "a here-document's closing word must be a literal word such as EOF or 'EOF'",
            ))
        }
    };
    if delimiter.is_empty() {
        return Ok(());
    }
    for line in doc.doc.value.lines() {
        let line = if doc.remove_tabs { line.trim_start_matches('\t') } else { line };
        if line.starts_with(delimiter.as_str()) {
            return Err(refuse(
                line,
                RefuseReason::HereDocument,
                "a line of this here-document starts with its closing word followed by more characters, where shells disagree about where it ends; use a closing word that no line of the text starts with",
            ));
        }
    }
    Ok(())
}
