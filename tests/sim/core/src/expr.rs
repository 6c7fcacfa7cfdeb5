//! The cost model's expression language: a hand-rolled tokenizer, recursive-descent parser
//! and evaluator.
//!
//! Grammar (all arithmetic in `f64`):
//!
//! ```text
//! expr    := term (('+' | '-') term)*              left-associative
//! term    := unary (('*' | '/' | '%') unary)*      left-associative
//! unary   := '-' unary | primary
//! primary := number | variable | function '(' args ')' | '(' expr ')'
//! args    := (expr (',' expr)*)?
//! number  := digits ['.' digits] [('e' | 'E') ['+' | '-'] digits]   (or '.' digits ...)
//! ```
//!
//! Functions: `min(a, b)`, `max(a, b)`, `ceil(x)`, `floor(x)`, `round(x)` (half away from
//! zero), `abs(x)`. `%` is the truncated remainder (sign of the dividend), like Rust's `%`.
//!
//! An expression is parsed once against a list of variable names: unknown variables,
//! unknown functions and wrong arities are parse errors. Evaluation takes the values in the
//! same order and fails only on division (or `%`) by zero.

use std::fmt;

/// Deepest nesting of parentheses, unary minus and function calls accepted.
pub const MAX_DEPTH: usize = 64;

/// A parsed, validated expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    src: String,
    root: Node,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Num(f64),
    /// Index into the variable list the expression was parsed against.
    Var(usize),
    Neg(Box<Node>),
    /// Operator, operands, and the 1-based column of the operator (for errors).
    Bin(BinOp, Box<Node>, Box<Node>, usize),
    Call(Func, Box<[Node]>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Min,
    Max,
    Ceil,
    Floor,
    Round,
    Abs,
}

/// The names of the functions the language knows.
pub const FUNCTIONS: [&str; 6] = ["min", "max", "ceil", "floor", "round", "abs"];

impl Func {
    fn lookup(name: &str) -> Option<Func> {
        Some(match name {
            "min" => Func::Min,
            "max" => Func::Max,
            "ceil" => Func::Ceil,
            "floor" => Func::Floor,
            "round" => Func::Round,
            "abs" => Func::Abs,
            _ => return None,
        })
    }

    fn arity(self) -> usize {
        match self {
            Func::Min | Func::Max => 2,
            Func::Ceil | Func::Floor | Func::Round | Func::Abs => 1,
        }
    }
}

/// What is wrong with an expression's text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The text is empty or only whitespace.
    Empty,
    /// A character that starts no token.
    UnexpectedChar(char),
    /// Something that starts like a number but is not one (`1e`, `3m`, `1.2.3`).
    BadNumber(String),
    /// A token where another was expected; `found` is quoted text or "end of expression".
    UnexpectedToken {
        found: String,
        expected: &'static str,
    },
    /// A name not in the variable list; `allowed` is that list.
    UnknownVariable { name: String, allowed: Vec<String> },
    /// A name followed by `(` that is not one of [`FUNCTIONS`].
    UnknownFunction(String),
    /// A known function called with the wrong number of arguments.
    Arity {
        function: &'static str,
        expected: usize,
        found: usize,
    },
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// A parse error: what, where (1-based character column) and in which expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub kind: ParseErrorKind,
    pub column: usize,
    pub expr: String,
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {one}s")
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ParseErrorKind::Empty => return write!(f, "empty expression"),
            ParseErrorKind::UnexpectedChar(c) => write!(f, "unexpected character `{c}`")?,
            ParseErrorKind::BadNumber(s) => write!(f, "invalid number `{s}`")?,
            ParseErrorKind::UnexpectedToken { found, expected } => {
                write!(f, "unexpected {found}, expected {expected}")?
            }
            ParseErrorKind::UnknownVariable { name, .. } => write!(f, "unknown variable `{name}`")?,
            ParseErrorKind::UnknownFunction(name) => write!(f, "unknown function `{name}`")?,
            ParseErrorKind::Arity {
                function,
                expected,
                found,
            } => write!(
                f,
                "function `{function}` takes {}, got {found}",
                plural(*expected, "argument")
            )?,
            ParseErrorKind::TooDeep => {
                write!(f, "expression nested more than {MAX_DEPTH} levels deep")?
            }
        }
        write!(f, " at column {} of `{}`", self.column, self.expr)?;
        match &self.kind {
            ParseErrorKind::UnknownVariable { allowed, .. } => {
                write!(f, "; available variables: {}", allowed.join(", "))
            }
            ParseErrorKind::UnknownFunction(_) => {
                write!(f, "; available functions: {}", FUNCTIONS.join(", "))
            }
            _ => Ok(()),
        }
    }
}

impl std::error::Error for ParseError {}

/// What went wrong evaluating an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EvalErrorKind {
    /// `a / 0`.
    DivisionByZero,
    /// `a % 0`.
    RemainderByZero,
}

/// An evaluation error: what, where (1-based column of the operator), in which expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    pub kind: EvalErrorKind,
    pub column: usize,
    pub expr: String,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            EvalErrorKind::DivisionByZero => "division by zero",
            EvalErrorKind::RemainderByZero => "remainder by zero",
        };
        write!(f, "{what} at column {} of `{}`", self.column, self.expr)
    }
}

impl std::error::Error for EvalError {}

impl Expr {
    /// Parses `src`, resolving identifiers against `variables` (their position is the index
    /// of the value [`Expr::eval`] reads).
    pub fn parse(src: &str, variables: &[&str]) -> Result<Expr, ParseError> {
        let fail = |kind, byte: usize| ParseError {
            kind,
            column: src[..byte].chars().count() + 1,
            expr: src.to_owned(),
        };
        let tokens = tokenize(src).map_err(|(kind, byte)| fail(kind, byte))?;
        if tokens.len() == 1 {
            return Err(fail(ParseErrorKind::Empty, 0));
        }
        let mut parser = Parser {
            src,
            tokens,
            next: 0,
            variables,
            depth: 0,
        };
        let root = parser
            .expr()
            .and_then(|root| match parser.peek().tok {
                Tok::End => Ok(root),
                _ => Err(parser.unexpected("an operator or the end of the expression")),
            })
            .map_err(|(kind, byte)| fail(kind, byte))?;
        Ok(Expr {
            src: src.to_owned(),
            root,
        })
    }

    /// The text the expression was parsed from.
    pub fn source(&self) -> &str {
        &self.src
    }

    /// Evaluates with `values[i]` as the value of the i-th variable of the list given to
    /// [`Expr::parse`].
    ///
    /// # Panics
    /// If `values` is shorter than that list and the expression uses a variable past its end.
    pub fn eval(&self, values: &[f64]) -> Result<f64, EvalError> {
        self.eval_node(&self.root, values)
    }

    fn eval_node(&self, node: &Node, values: &[f64]) -> Result<f64, EvalError> {
        Ok(match node {
            Node::Num(x) => *x,
            Node::Var(i) => values[*i],
            Node::Neg(a) => -self.eval_node(a, values)?,
            Node::Bin(op, a, b, column) => {
                let a = self.eval_node(a, values)?;
                let b = self.eval_node(b, values)?;
                let fail = |kind| EvalError {
                    kind,
                    column: *column,
                    expr: self.src.clone(),
                };
                match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    BinOp::Mul => a * b,
                    BinOp::Div if b == 0.0 => return Err(fail(EvalErrorKind::DivisionByZero)),
                    BinOp::Div => a / b,
                    BinOp::Rem if b == 0.0 => return Err(fail(EvalErrorKind::RemainderByZero)),
                    BinOp::Rem => a % b,
                }
            }
            Node::Call(func, args) => {
                let x = self.eval_node(&args[0], values)?;
                match func {
                    Func::Min => x.min(self.eval_node(&args[1], values)?),
                    Func::Max => x.max(self.eval_node(&args[1], values)?),
                    Func::Ceil => x.ceil(),
                    Func::Floor => x.floor(),
                    Func::Round => x.round(),
                    Func::Abs => x.abs(),
                }
            }
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok<'a> {
    Num(f64),
    Ident(&'a str),
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    LParen,
    RParen,
    Comma,
    End,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    tok: Tok<'a>,
    /// Byte range in the source.
    start: usize,
    end: usize,
}

/// An error and the byte offset it is at.
type Failure = (ParseErrorKind, usize);

fn tokenize(src: &str) -> Result<Vec<Token<'_>>, Failure> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        let tok = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'+' => Tok::Plus,
            b'-' => Tok::Minus,
            b'*' => Tok::Star,
            b'/' => Tok::Slash,
            b'%' => Tok::Percent,
            b'(' => Tok::LParen,
            b')' => Tok::RParen,
            b',' => Tok::Comma,
            b'0'..=b'9' | b'.' => {
                // Take the whole run a number could be part of, so `3m` or `1.2.3` is one
                // bad number rather than a confusing pair of tokens.
                i += 1;
                while i < bytes.len() {
                    let d = bytes[i];
                    let exponent_sign = (d == b'+' || d == b'-')
                        && matches!(bytes[i - 1], b'e' | b'E')
                        && !src[start..i - 1].bytes().any(|x| x.is_ascii_alphabetic());
                    if d.is_ascii_alphanumeric() || d == b'_' || d == b'.' || exponent_sign {
                        i += 1;
                    } else {
                        break;
                    }
                }
                let text = &src[start..i];
                let value = text
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && text.bytes().any(|b| b.is_ascii_digit()))
                    .ok_or_else(|| (ParseErrorKind::BadNumber(text.to_owned()), start))?;
                tokens.push(Token {
                    tok: Tok::Num(value),
                    start,
                    end: i,
                });
                continue;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                i += 1;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                tokens.push(Token {
                    tok: Tok::Ident(&src[start..i]),
                    start,
                    end: i,
                });
                continue;
            }
            _ => {
                let ch = src[start..].chars().next().unwrap_or('\u{fffd}');
                return Err((ParseErrorKind::UnexpectedChar(ch), start));
            }
        };
        i += 1;
        tokens.push(Token { tok, start, end: i });
    }
    tokens.push(Token {
        tok: Tok::End,
        start: src.len(),
        end: src.len(),
    });
    Ok(tokens)
}

struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token<'a>>,
    next: usize,
    variables: &'a [&'a str],
    depth: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Token<'a> {
        self.tokens[self.next]
    }

    fn bump(&mut self) -> Token<'a> {
        let t = self.tokens[self.next];
        if !matches!(t.tok, Tok::End) {
            self.next += 1;
        }
        t
    }

    fn column(&self, byte: usize) -> usize {
        self.src[..byte].chars().count() + 1
    }

    fn unexpected(&self, expected: &'static str) -> Failure {
        let t = self.peek();
        let found = match t.tok {
            Tok::End => "end of expression".to_owned(),
            _ => format!("`{}`", &self.src[t.start..t.end]),
        };
        (ParseErrorKind::UnexpectedToken { found, expected }, t.start)
    }

    fn enter(&mut self, at: usize) -> Result<(), Failure> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err((ParseErrorKind::TooDeep, at));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Node, Failure> {
        let mut lhs = self.term()?;
        loop {
            let t = self.peek();
            let op = match t.tok {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(lhs),
            };
            self.bump();
            let rhs = self.term()?;
            lhs = Node::Bin(op, Box::new(lhs), Box::new(rhs), self.column(t.start));
        }
    }

    fn term(&mut self) -> Result<Node, Failure> {
        let mut lhs = self.unary()?;
        loop {
            let t = self.peek();
            let op = match t.tok {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                Tok::Percent => BinOp::Rem,
                _ => return Ok(lhs),
            };
            self.bump();
            let rhs = self.unary()?;
            lhs = Node::Bin(op, Box::new(lhs), Box::new(rhs), self.column(t.start));
        }
    }

    fn unary(&mut self) -> Result<Node, Failure> {
        let t = self.peek();
        if let Tok::Minus = t.tok {
            self.bump();
            self.enter(t.start)?;
            let operand = self.unary()?;
            self.depth -= 1;
            return Ok(Node::Neg(Box::new(operand)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Node, Failure> {
        const EXPECTED: &str = "a number, a variable, a function call or `(`";
        let t = self.peek();
        match t.tok {
            Tok::Num(x) => {
                self.bump();
                Ok(Node::Num(x))
            }
            Tok::LParen => {
                self.bump();
                self.enter(t.start)?;
                let inner = self.expr()?;
                if !matches!(self.peek().tok, Tok::RParen) {
                    return Err(self.unexpected("`)`"));
                }
                self.bump();
                self.depth -= 1;
                Ok(inner)
            }
            Tok::Ident(name) => {
                self.bump();
                if matches!(self.peek().tok, Tok::LParen) {
                    self.call(name, t.start)
                } else {
                    match self.variables.iter().position(|v| *v == name) {
                        Some(i) => Ok(Node::Var(i)),
                        None => Err((
                            ParseErrorKind::UnknownVariable {
                                name: name.to_owned(),
                                allowed: self.variables.iter().map(|v| (*v).to_owned()).collect(),
                            },
                            t.start,
                        )),
                    }
                }
            }
            _ => Err(self.unexpected(EXPECTED)),
        }
    }

    /// Parses a call's argument list; the name has been consumed, `(` is next.
    fn call(&mut self, name: &str, at: usize) -> Result<Node, Failure> {
        let func = Func::lookup(name)
            .ok_or_else(|| (ParseErrorKind::UnknownFunction(name.to_owned()), at))?;
        self.bump(); // `(`
        self.enter(at)?;
        let mut args = Vec::new();
        if !matches!(self.peek().tok, Tok::RParen) {
            loop {
                args.push(self.expr()?);
                match self.peek().tok {
                    Tok::Comma => {
                        self.bump();
                    }
                    Tok::RParen => break,
                    _ => return Err(self.unexpected("`,` or `)`")),
                }
            }
        }
        self.bump(); // `)`
        self.depth -= 1;
        if args.len() != func.arity() {
            return Err((
                ParseErrorKind::Arity {
                    function: FUNCTIONS[func as usize],
                    expected: func.arity(),
                    found: args.len(),
                },
                at,
            ));
        }
        Ok(Node::Call(func, args.into_boxed_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VARS: [&str; 3] = ["a", "b", "zero"];
    const VALUES: [f64; 3] = [6.0, 4.0, 0.0];

    fn eval(src: &str) -> f64 {
        Expr::parse(src, &VARS)
            .unwrap_or_else(|e| panic!("{e}"))
            .eval(&VALUES)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn parse_err(src: &str) -> String {
        Expr::parse(src, &VARS).unwrap_err().to_string()
    }

    fn eval_err(src: &str) -> String {
        Expr::parse(src, &VARS)
            .unwrap()
            .eval(&VALUES)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn numbers() {
        assert_eq!(eval("42"), 42.0);
        assert_eq!(eval("1e3"), 1000.0);
        assert_eq!(eval("1E3"), 1000.0);
        assert_eq!(eval("2.5e-1"), 0.25);
        assert_eq!(eval("1.5e+2"), 150.0);
        assert_eq!(eval("0.5"), 0.5);
        assert_eq!(eval(".5"), 0.5);
        assert_eq!(eval("  7\t"), 7.0);
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(eval("1 + 2 * 3"), 7.0);
        assert_eq!(eval("(1 + 2) * 3"), 9.0);
        assert_eq!(eval("10 - 4 - 3"), 3.0);
        assert_eq!(eval("10 - (4 - 3)"), 9.0);
        assert_eq!(eval("64 / 4 / 2"), 8.0);
        assert_eq!(eval("64 / (4 / 2)"), 32.0);
        assert_eq!(eval("7 % 4 * 2"), 6.0);
        assert_eq!(eval("2 * 7 % 4"), 2.0);
        assert_eq!(eval("1 + 10 % 4"), 3.0);
        assert_eq!(eval("2 + 3 * 4 - 6 / 2"), 11.0);
        assert_eq!(eval("a * b + a / b"), 25.5);
    }

    #[test]
    fn unary_minus() {
        assert_eq!(eval("-3"), -3.0);
        assert_eq!(eval("--3"), 3.0);
        assert_eq!(eval("2 - -3"), 5.0);
        assert_eq!(eval("-2 * 3"), -6.0);
        assert_eq!(eval("-2 + 5"), 3.0);
        assert_eq!(eval("-(1 + 2)"), -3.0);
        assert_eq!(eval("-a * -b"), 24.0);
        assert_eq!(eval("2*-a"), -12.0);
        assert_eq!(eval("-7 % 3"), -1.0);
        assert_eq!(eval("7 % -3"), 1.0);
    }

    #[test]
    fn functions() {
        assert_eq!(eval("min(a, b)"), 4.0);
        assert_eq!(eval("max(a, b)"), 6.0);
        assert_eq!(eval("max(max(1, 7), 3)"), 7.0);
        assert_eq!(eval("min(-1, -2)"), -2.0);
        assert_eq!(eval("ceil(2.1)"), 3.0);
        assert_eq!(eval("ceil(-2.1)"), -2.0);
        assert_eq!(eval("floor(2.9)"), 2.0);
        assert_eq!(eval("floor(-2.1)"), -3.0);
        assert_eq!(eval("round(2.5)"), 3.0);
        assert_eq!(eval("round(-2.5)"), -3.0);
        assert_eq!(eval("round(2.4999)"), 2.0);
        assert_eq!(eval("abs(-4)"), 4.0);
        assert_eq!(eval("abs(b - a)"), 2.0);
        assert_eq!(eval("2 * max(a, b) + ceil(a / b)"), 14.0);
        assert_eq!(eval("max ( 1 , 2 )"), 2.0);
    }

    #[test]
    fn variables_resolve_by_position() {
        let e = Expr::parse("x - y", &["y", "x"]).unwrap();
        assert_eq!(e.eval(&[1.0, 10.0]), Ok(9.0));
        assert_eq!(e.source(), "x - y");
    }

    #[test]
    fn unknown_variable_and_function() {
        assert_eq!(
            parse_err("a + c"),
            "unknown variable `c` at column 5 of `a + c`; available variables: a, b, zero"
        );
        assert_eq!(
            parse_err("sqrt(a)"),
            "unknown function `sqrt` at column 1 of `sqrt(a)`; \
             available functions: min, max, ceil, floor, round, abs"
        );
        // Variables are case-sensitive.
        assert!(parse_err("A").starts_with("unknown variable `A` at column 1"));
    }

    #[test]
    fn arity() {
        assert_eq!(
            parse_err("1 + max(a)"),
            "function `max` takes 2 arguments, got 1 at column 5 of `1 + max(a)`"
        );
        assert_eq!(
            parse_err("min(1, 2, 3)"),
            "function `min` takes 2 arguments, got 3 at column 1 of `min(1, 2, 3)`"
        );
        assert_eq!(
            parse_err("abs()"),
            "function `abs` takes 1 argument, got 0 at column 1 of `abs()`"
        );
        assert_eq!(
            parse_err("ceil(a, b)"),
            "function `ceil` takes 1 argument, got 2 at column 1 of `ceil(a, b)`"
        );
    }

    #[test]
    fn syntax_errors() {
        assert_eq!(parse_err(""), "empty expression");
        assert_eq!(parse_err("   "), "empty expression");
        assert_eq!(
            parse_err("(a + b"),
            "unexpected end of expression, expected `)` at column 7 of `(a + b`"
        );
        assert_eq!(
            parse_err("a b"),
            "unexpected `b`, expected an operator or the end of the expression at column 3 of `a b`"
        );
        assert_eq!(
            parse_err("a +"),
            "unexpected end of expression, expected a number, a variable, a function call or `(` \
             at column 4 of `a +`"
        );
        assert_eq!(
            parse_err("+a"),
            "unexpected `+`, expected a number, a variable, a function call or `(` \
             at column 1 of `+a`"
        );
        assert_eq!(
            parse_err("a)"),
            "unexpected `)`, expected an operator or the end of the expression at column 2 of `a)`"
        );
        assert_eq!(
            parse_err("max(1 2)"),
            "unexpected `2`, expected `,` or `)` at column 7 of `max(1 2)`"
        );
        assert_eq!(
            parse_err("a ^ 2"),
            "unexpected character `^` at column 3 of `a ^ 2`"
        );
        assert_eq!(
            parse_err("µ + a"),
            "unexpected character `µ` at column 1 of `µ + a`"
        );
        // Columns count characters, not bytes.
        assert_eq!(
            parse_err("(µ"),
            "unexpected character `µ` at column 2 of `(µ`"
        );
        for bad in ["1e", "3m", "1.2.3", ".", "1e+", "0x10", "1_000", "1e999"] {
            assert_eq!(
                parse_err(&format!("a + {bad}")),
                format!("invalid number `{bad}` at column 5 of `a + {bad}`")
            );
        }
    }

    #[test]
    fn nesting_limit() {
        let ok = format!("{}1{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(eval(&ok), 1.0);
        let deep = format!(
            "{}1{}",
            "(".repeat(MAX_DEPTH + 1),
            ")".repeat(MAX_DEPTH + 1)
        );
        assert!(
            parse_err(&deep).starts_with("expression nested more than 64 levels deep at column 65")
        );
        let negs = format!("{}1", "-".repeat(MAX_DEPTH + 1));
        assert!(parse_err(&negs).starts_with("expression nested more than 64 levels deep"));
    }

    #[test]
    fn division_by_zero_is_an_error() {
        assert_eq!(
            eval_err("a / zero"),
            "division by zero at column 3 of `a / zero`"
        );
        assert_eq!(
            eval_err("1 + a % (b - 4)"),
            "remainder by zero at column 7 of `1 + a % (b - 4)`"
        );
        assert_eq!(eval("zero / a"), 0.0);
        // Only the operands actually evaluated matter: min evaluates both.
        assert_eq!(
            eval_err("min(1, 1/zero)"),
            "division by zero at column 9 of `min(1, 1/zero)`"
        );
    }
}
