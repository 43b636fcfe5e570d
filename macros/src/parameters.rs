//! `#[derive(Parameters)]`: the walk over a struct's fields, each visited under its own name (`self.weight` as
//! `prefix.weight`, a tuple struct's fields as `prefix.0`, ..), in declaration order. A field marked
//! `#[parameters(skip)]` is not visited (configuration, caches); one marked `#[parameters(flatten)]` is visited
//! under the struct's own prefix, so its fields' names are the struct's (PyTorch names a module's buffers and
//! parameters flat); one marked `#[parameters(packed)]` is visited through `nn::Packed`, so files store its
//! parameters with their first two axes merged (PyTorch's `in_proj_weight (3E, E)` held as `(3, E, E)`). A field whose type names one of the struct's type parameters gets the bound `Type:
//! Parameters` on the impl, so a generic wrapper (`struct Residual<M> { inner: M }`) derives it too.
//!
//! Parsed by hand over `proc_macro`'s token trees, as `#[layer]` is: the derive reads attributes, a name,
//! generics, a where clause and fields, which needs no parser crate in every user's cold build.

use proc_macro::{Delimiter, Span, TokenStream, TokenTree};

/// One field to visit.
struct Field {
    /// The expression after `self.`: a name or a tuple index.
    access: String,
    /// The field's type, as written.
    ty: Vec<TokenTree>,
    /// How it is visited.
    setting: Setting,
}

/// A field's `#[parameters(..)]` word.
#[derive(Clone, Copy, PartialEq)]
enum Setting {
    /// No attribute: visited under its own name.
    Visit,
    /// `skip`: not visited (configuration, caches).
    Skip,
    /// `flatten`: visited under the struct's prefix instead of its own name.
    Flatten,
    /// `packed`: visited under its own name through `nn::Packed`.
    Packed,
}

/// The impl for `item`, or a `compile_error!` at what it cannot read.
pub(crate) fn derive(item: TokenStream) -> TokenStream {
    match expand(item) {
        Ok(out) => out,
        Err((span, message)) => crate::error(span, &message),
    }
}

type Failure = (Span, String);

fn fail<T>(span: Span, message: &str) -> Result<T, Failure> {
    Err((span, String::from(message)))
}

fn expand(item: TokenStream) -> Result<TokenStream, Failure> {
    let trees: Vec<TokenTree> = item.into_iter().collect();
    let mut rest = skip_visibility(skip_attributes(&trees));
    let keyword = match rest.first() {
        Some(TokenTree::Ident(k)) => k.clone(),
        Some(other) => return fail(other.span(), "derive(Parameters) reads a struct"),
        None => return fail(Span::call_site(), "derive(Parameters) reads a struct"),
    };
    if keyword.to_string() != "struct" {
        return fail(
            keyword.span(),
            "derive(Parameters) is for structs: write the walk of an enum by hand",
        );
    }
    let name = match rest.get(1) {
        Some(TokenTree::Ident(name)) => name.to_string(),
        _ => {
            return fail(
                keyword.span(),
                "derive(Parameters): a struct name follows `struct`",
            )
        }
    };
    rest = &rest[2..];
    // Generics: everything between the `<` after the name and its matching `>`.
    let mut generics: Vec<TokenTree> = Vec::new();
    if let [TokenTree::Punct(open), tail @ ..] = rest
        && open.as_char() == '<'
    {
        let end = closing_angle(tail).ok_or((open.span(), String::from("unbalanced generics")))?;
        generics = tail[..end].to_vec();
        rest = &tail[end + 1..];
    }
    // A tuple struct's fields come before its where clause; a braced struct's after.
    let (fields, where_clause) = match rest {
        [TokenTree::Group(g), tail @ ..] if g.delimiter() == Delimiter::Parenthesis => {
            (tuple_fields(g.stream())?, where_tokens(tail))
        }
        _ => {
            let brace = rest.iter().position(
                |t| matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace),
            );
            match brace {
                Some(i) => {
                    let TokenTree::Group(g) = &rest[i] else {
                        unreachable!("position found a group")
                    };
                    (named_fields(g.stream())?, where_tokens(&rest[..i]))
                }
                None => (Vec::new(), where_tokens(rest)), // a unit struct
            }
        }
    };
    let params = split_top_level(&generics);
    let type_params: Vec<String> = params.iter().filter_map(|p| type_param(p)).collect();
    let impl_generics: Vec<String> = params.iter().map(|p| without_default(p)).collect();
    let ty_generics: Vec<String> = params.iter().filter_map(|p| param_name(p)).collect();
    let mut predicates = stream_string(&where_clause).trim().to_string();
    for field in &fields {
        if mentions(&field.ty, &type_params) {
            if !predicates.is_empty() && !predicates.ends_with(',') {
                predicates.push(',');
            }
            predicates.push_str(&format!(
                " {}: ::typed_tensor::nn::Parameters",
                stream_string(&field.ty)
            ));
        }
    }
    let mut body = String::new();
    for field in &fields {
        let prefix = if field.setting == Setting::Flatten {
            String::from("prefix")
        } else {
            format!("&::typed_tensor::nn::join_name(prefix, {:?})", field.access)
        };
        let visitor = if field.setting == Setting::Packed {
            "&mut ::typed_tensor::nn::Packed(visitor)"
        } else {
            "visitor"
        };
        body.push_str(&format!(
            "::typed_tensor::nn::Parameters::visit_params(&self.{}, {prefix}, {visitor});\n",
            field.access
        ));
    }
    let visitor_used = if fields.is_empty() {
        "let _ = (prefix, visitor);"
    } else {
        ""
    };
    let code = format!(
        "#[automatically_derived]\n\
         impl<{impl_g}> ::typed_tensor::nn::Parameters for {name}<{ty_g}> {where_kw} {predicates} {{\n\
             fn visit_params<__V: ::typed_tensor::nn::ParamVisitor>(&self, prefix: &str, visitor: &mut __V) {{\n\
                 {visitor_used}\n{body}\
             }}\n\
         }}",
        impl_g = impl_generics.join(", "),
        ty_g = ty_generics.join(", "),
        where_kw = if predicates.is_empty() { "" } else { "where" },
    );
    code.parse().map_err(|_| {
        (
            Span::call_site(),
            format!("derive(Parameters) wrote an impl that does not parse: {code}"),
        )
    })
}

/// `trees` after its leading attributes (`#[..]`, doc comments).
fn skip_attributes(mut trees: &[TokenTree]) -> &[TokenTree] {
    while let [TokenTree::Punct(hash), TokenTree::Group(g), tail @ ..] = trees
        && hash.as_char() == '#'
        && g.delimiter() == Delimiter::Bracket
    {
        trees = tail;
    }
    trees
}

/// `trees` after a visibility: `pub`, optionally `pub(crate)`, `pub(super)`, ...
fn skip_visibility(trees: &[TokenTree]) -> &[TokenTree] {
    match trees {
        [TokenTree::Ident(v), TokenTree::Group(g), tail @ ..]
            if v.to_string() == "pub" && restricted(g) =>
        {
            tail
        }
        [TokenTree::Ident(v), tail @ ..] if v.to_string() == "pub" => tail,
        _ => trees,
    }
}

/// Whether `g` is a visibility's restriction, `(crate)`, `(self)`, `(super)` or `(in path)`, and not a tuple type
/// after `pub` (a tuple struct's `pub (A, B)` field).
fn restricted(g: &proc_macro::Group) -> bool {
    g.delimiter() == Delimiter::Parenthesis
        && matches!(g.stream().into_iter().next(),
            Some(TokenTree::Ident(i)) if ["crate", "self", "super", "in"].contains(&i.to_string().as_str()))
}

/// The index of the `>` closing a `<` just before `trees`, counting nested `<`/`>` and not counting the `>` of
/// `->`.
fn closing_angle(trees: &[TokenTree]) -> Option<usize> {
    let mut depth = 1usize;
    for (i, tree) in trees.iter().enumerate() {
        if let TokenTree::Punct(p) = tree {
            match p.as_char() {
                '<' => depth += 1,
                '>' if !arrow(trees, i) => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

/// Whether the `>` at `i` ends a `->`.
fn arrow(trees: &[TokenTree], i: usize) -> bool {
    i > 0 && matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == '-')
}

/// `trees` split at the commas outside any `<..>`.
fn split_top_level(trees: &[TokenTree]) -> Vec<Vec<TokenTree>> {
    let mut parts = vec![Vec::new()];
    let mut depth = 0usize;
    for (i, tree) in trees.iter().enumerate() {
        if let TokenTree::Punct(p) = tree {
            match p.as_char() {
                '<' => depth += 1,
                '>' if !arrow(trees, i) => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    parts.push(Vec::new());
                    continue;
                }
                _ => {}
            }
        }
        parts
            .last_mut()
            .expect("one part at least")
            .push(tree.clone());
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// The where clause's predicates in `trees` (after `where`, before a trailing `;`).
fn where_tokens(trees: &[TokenTree]) -> Vec<TokenTree> {
    let start = trees
        .iter()
        .position(|t| matches!(t, TokenTree::Ident(i) if i.to_string() == "where"));
    let Some(start) = start else {
        return Vec::new();
    };
    trees[start + 1..]
        .iter()
        .take_while(|t| !matches!(t, TokenTree::Punct(p) if p.as_char() == ';'))
        .cloned()
        .collect()
}

/// A generic parameter's name as the type's arguments name it (`'a`, `T`, `N` of `const N: usize`).
fn param_name(param: &[TokenTree]) -> Option<String> {
    match param {
        [TokenTree::Punct(q), TokenTree::Ident(name), ..] if q.as_char() == '\'' => {
            Some(format!("'{name}"))
        }
        [TokenTree::Ident(k), TokenTree::Ident(name), ..] if k.to_string() == "const" => {
            Some(name.to_string())
        }
        [TokenTree::Ident(name), ..] => Some(name.to_string()),
        _ => None,
    }
}

/// A type parameter's name (not a lifetime's or a const's).
fn type_param(param: &[TokenTree]) -> Option<String> {
    match param {
        [TokenTree::Punct(_), ..] => None,
        [TokenTree::Ident(k), ..] if k.to_string() == "const" => None,
        [TokenTree::Ident(name), ..] => Some(name.to_string()),
        _ => None,
    }
}

/// A generic parameter as the impl declares it: its default (`= ..` at the top level) dropped.
fn without_default(param: &[TokenTree]) -> String {
    let end = param
        .iter()
        .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == '='))
        .unwrap_or(param.len());
    stream_string(&param[..end])
}

fn stream_string(trees: &[TokenTree]) -> String {
    trees.iter().cloned().collect::<TokenStream>().to_string()
}

/// Whether `ty` names any of `params`.
fn mentions(ty: &[TokenTree], params: &[String]) -> bool {
    ty.iter().any(|t| match t {
        TokenTree::Ident(i) => params.contains(&i.to_string()),
        TokenTree::Group(g) => mentions(&g.stream().into_iter().collect::<Vec<_>>(), params),
        _ => false,
    })
}

/// A field's `#[parameters(..)]` setting; another word in it is an error.
fn setting(attrs: &[TokenTree]) -> Result<Setting, Failure> {
    let mut found = Setting::Visit;
    let mut rest = attrs;
    while let [TokenTree::Punct(_), TokenTree::Group(g), tail @ ..] = rest {
        rest = tail;
        let inner: Vec<TokenTree> = g.stream().into_iter().collect();
        let [TokenTree::Ident(path), TokenTree::Group(args)] = inner.as_slice() else {
            continue;
        };
        if path.to_string() != "parameters" {
            continue;
        }
        found = match args.stream().to_string().trim() {
            "skip" => Setting::Skip,
            "flatten" => Setting::Flatten,
            "packed" => Setting::Packed,
            _ => {
                return fail(
                    args.span(),
                    "derive(Parameters): write #[parameters(skip)], #[parameters(flatten)] or \
                     #[parameters(packed)]",
                )
            }
        };
    }
    Ok(found)
}

/// The fields of `{ .. }`.
fn named_fields(stream: TokenStream) -> Result<Vec<Field>, Failure> {
    let trees: Vec<TokenTree> = stream.into_iter().collect();
    let mut fields = Vec::new();
    for part in split_top_level(&trees) {
        let after = skip_attributes(&part);
        let attrs = &part[..part.len() - after.len()];
        let rest = skip_visibility(after);
        let [TokenTree::Ident(name), TokenTree::Punct(colon), ty @ ..] = rest else {
            let span = part.first().map_or_else(Span::call_site, TokenTree::span);
            return fail(span, "derive(Parameters): a field is `name: Type`");
        };
        if colon.as_char() != ':' {
            return fail(colon.span(), "derive(Parameters): a field is `name: Type`");
        }
        match setting(attrs)? {
            Setting::Skip => continue,
            setting => fields.push(Field {
                access: name.to_string(),
                ty: ty.to_vec(),
                setting,
            }),
        }
    }
    Ok(fields)
}

/// The fields of `( .. )`, named by their index.
fn tuple_fields(stream: TokenStream) -> Result<Vec<Field>, Failure> {
    let trees: Vec<TokenTree> = stream.into_iter().collect();
    let mut fields = Vec::new();
    for (i, part) in split_top_level(&trees).into_iter().enumerate() {
        let after = skip_attributes(&part);
        let attrs = &part[..part.len() - after.len()];
        let ty = skip_visibility(after);
        match setting(attrs)? {
            Setting::Skip => continue,
            setting => fields.push(Field {
                access: i.to_string(),
                ty: ty.to_vec(),
                setting,
            }),
        }
    }
    Ok(fields)
}
