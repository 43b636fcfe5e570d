//! typed-tensor's procedural macros: `#[layer]`, for writing a layer's `Module` impl once, and
//! `#[derive(Parameters)]`, the walk over a model's fields. Use them through `typed_tensor::nn::layer` and
//! `typed_tensor::nn::Parameters`, whose documentation has the examples.

mod parameters;

use proc_macro::{Delimiter, Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};

/// `#[derive(Parameters)]`: visits each field under its name (see `typed_tensor::nn::Parameters`).
#[proc_macro_derive(Parameters, attributes(parameters))]
pub fn derive_parameters(item: TokenStream) -> TokenStream {
    parameters::derive(item)
}

/// The placeholder the impl writes for the kind of value.
const PLACEHOLDER: &str = "Value";

/// Writes the `impl` it is put on twice: once with every `Value` read as `typed_tensor::Tensor` (inference) and
/// once as `typed_tensor::autograd::Traced` (training). See `typed_tensor::nn::layer`.
#[proc_macro_attribute]
pub fn layer(attr: TokenStream, item: TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = item.clone().into_iter().collect();
    // A misuse is reported with the item left as written, so that it causes no second, unrelated error.
    let refuse = |span: Span, message: &str| {
        let mut out = error(span, message);
        out.extend(item.clone());
        out
    };
    if let Some(tree) = attr.into_iter().next() {
        return refuse(tree.span(), "#[layer] takes no arguments");
    }
    // The item's own attributes (`#[..]`, doc comments) come first: the keyword follows them.
    let mut rest = trees.as_slice();
    while let [TokenTree::Punct(hash), TokenTree::Group(attr), tail @ ..] = rest
        && hash.as_char() == '#'
        && attr.delimiter() == Delimiter::Bracket
    {
        rest = tail;
    }
    match rest.first() {
        Some(TokenTree::Ident(first)) if first.to_string() == "impl" => {}
        first => {
            let span = first.map_or_else(Span::call_site, TokenTree::span);
            return refuse(
                span,
                "#[layer] goes on an `impl Module<Value<..>> for ..` block",
            );
        }
    }
    if !mentions_placeholder(&trees) {
        return refuse(
            rest[0].span(),
            "#[layer]: this impl never names `Value`, the kind of value it is written for \
             (write the input as `Value<T, S, D>`)",
        );
    }
    let mut out = TokenStream::new();
    out.extend(substitute(&trees, &["typed_tensor", "Tensor"]));
    out.extend(substitute(&trees, &["typed_tensor", "autograd", "Traced"]));
    out
}

/// Whether `Value` occurs anywhere in `trees`.
fn mentions_placeholder(trees: &[TokenTree]) -> bool {
    trees.iter().any(|tree| match tree {
        TokenTree::Ident(ident) => ident.to_string() == PLACEHOLDER,
        TokenTree::Group(group) => {
            mentions_placeholder(&group.stream().into_iter().collect::<Vec<_>>())
        }
        _ => false,
    })
}

/// `trees` with each `Value` replaced by the absolute path `::a::b::..`, carrying the placeholder's span, so that
/// compiler messages quote the impl as written.
fn substitute(trees: &[TokenTree], path: &[&str]) -> Vec<TokenTree> {
    let mut out = Vec::with_capacity(trees.len());
    for tree in trees {
        match tree {
            TokenTree::Ident(ident) if ident.to_string() == PLACEHOLDER => {
                let span = ident.span();
                for segment in path {
                    let mut colon = Punct::new(':', Spacing::Joint);
                    colon.set_span(span);
                    out.push(TokenTree::Punct(colon));
                    let mut colon = Punct::new(':', Spacing::Alone);
                    colon.set_span(span);
                    out.push(TokenTree::Punct(colon));
                    out.push(TokenTree::Ident(Ident::new(segment, span)));
                }
            }
            TokenTree::Group(group) => {
                let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                let mut copy = Group::new(
                    group.delimiter(),
                    substitute(&inner, path).into_iter().collect(),
                );
                copy.set_span(group.span());
                out.push(TokenTree::Group(copy));
            }
            other => out.push(other.clone()),
        }
    }
    out
}

/// `compile_error!("message")` at `span`.
fn error(span: Span, message: &str) -> TokenStream {
    let mut literal = proc_macro::Literal::string(message);
    literal.set_span(span);
    let mut args = Group::new(Delimiter::Parenthesis, TokenTree::Literal(literal).into());
    args.set_span(span);
    let mut bang = Punct::new('!', Spacing::Alone);
    bang.set_span(span);
    let mut semi = Punct::new(';', Spacing::Alone);
    semi.set_span(span);
    [
        TokenTree::Ident(Ident::new("compile_error", span)),
        TokenTree::Punct(bang),
        TokenTree::Group(args),
        TokenTree::Punct(semi),
    ]
    .into_iter()
    .collect()
}
