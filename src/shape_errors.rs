//! The compile-fail gallery: every shape rule of the library, shown by a program that breaks it and the exact
//! error the compiler gives, rule by rule. The programs and their errors are `tests/ui/fail/*.rs` and `.stderr`,
//! included here as they are (so this page cannot drift from what the compiler says: `cargo test --test ui`
//! checks each error byte for byte, and a test there checks that every program is shown here).
//!
//! Two kinds of errors appear:
//! - **`error[E0277]` and the like**: a trait bound the call does not meet. `cargo check` reports it, at the
//!   line of the call, so an editor shows it while you type.
//! - **`error[E0080]: evaluation panicked`**: a size rule with arithmetic in it (a convolution's output size, a
//!   concatenation's sum). Stable Rust cannot compute with a const generic in a bound, so these are `const`
//!   checks, evaluated when the generic code is instantiated: `cargo build` and `cargo test` report them, not
//!   `cargo check`. Each message works the rule out on your sizes and names the number to write; the last
//!   note, "the above error was encountered while instantiating", points at your call.
//!
//! Paths in the errors read `src/...` for the library's source and `$RUST` for the toolchain's.

/// Declares one page per group of rules, each showing its programs and errors, and [`CASES`], every program's
/// name. (The pages' names end in `_rules`: a module named like one of the crate's, `conv`, would make rustc
/// print that one's items with their full paths in every error.)
macro_rules! gallery {
    ($($(#[$doc:meta])* $group:ident: [$($case:ident),* $(,)?];)*) => {
        $(
            $(#[$doc])*
            $(
                #[doc = concat!("\n## `", stringify!($case), "`\n\n```text\n")]
                #[doc = include_str!(concat!("../tests/ui/fail/", stringify!($case), ".rs"))]
                #[doc = "```\n\n```text"]
                #[doc = include_str!(concat!("../tests/ui/fail/", stringify!($case), ".stderr"))]
                #[doc = "```"]
            )*
            pub mod $group {}
        )*

        /// The name of every program in the gallery (`tests/ui/fail/<name>.rs`).
        pub const CASES: &[&str] = &[$($(stringify!($case)),*),*];
    };
}

gallery! {
    /// Elementwise ops: shapes that broadcast (equal, or one a suffix of the other), in-place ops that keep
    /// the left shape, element types and devices that match.
    elementwise_rules: [
        add_mismatched_shapes, broadcast_not_a_suffix, broadcast_incompatible, broadcast_of_a_traced_value,
        broadcast_to_fewer_axes,
        add_assign_mismatched_shapes, add_assign_grows_lhs, where_cond_needs_a_u8_mask, mixing_dtypes,
        scalar_of_another_dtype, exp_on_integers, neg_on_unsigned, mixing_cpu_and_embedded,
    ];
    /// Views and reshapes: element counts kept, axes in range, merges that are merges.
    view_rules: [
        reshape_changes_numel, flatten_wrong_merge, narrow_axis_out_of_range, axis_from_end_past_the_rank, narrow_past_the_end,
        permute_axis_out_of_range, permute_repeats_an_axis, transpose_axis_out_of_range, squeeze_non_unit_axis,
        unsqueeze_past_the_end, from_array_wrong_shape,
    ];
    /// Joining, splitting, repeating, padding and flipping: the sizes along the axis add up, the axes exist.
    join_rules: [
        cat_other_dims_differ, cat_wrong_output_size, concat_wrong_output_size, concat_parts_disagree, split_does_not_tile, split_sizes_do_not_add_up, tile_not_a_multiple,
        tile_to_runtime_dims, repeat_interleave_to_runtime_dims, pad_reflect_longer_than_the_axis, flip_axis_out_of_range,
    ];
    /// Reductions, scans and sorting: axes in range and in order, element types that have a mean, lanes that
    /// are not empty.
    reduction_rules: [
        reduce_axis_out_of_range, reduce_axes_out_of_order, mean_of_integers, max_of_empty_axis,
        median_of_empty_axis, cumsum_axis_out_of_range, softmax_axis_out_of_range, topk_larger_than_axis,
    ];
    /// Indexing and masks: indices of an index type, as many as the axes, shapes that agree.
    indexing_rules: [
        index_rank0, index_too_many_axes, index_with_floats, gather_index_shape_mismatch, one_hot_zero_classes,
        tril_of_a_vector,
    ];
    /// Matrix products: inner dims and batches that agree.
    matmul_rules: [matmul_inner_dim_mismatch, matmul_batch_mismatch];
    /// Convolution, pooling and resampling: PyTorch's output-size rules, channels and groups, geometries.
    conv_rules: [
        conv2d_wrong_output_size, conv2d_of_a_traced_value, conv2d_channel_mismatch, conv_asymmetric_padding_wrong_output,
        conv1d_geometry_per_axis, conv3d_wrong_output_size, conv3d_asymmetric_padding_wrong_output,
        conv_transpose_output_padding_too_large, unfold_wrong_columns, pixel_shuffle_wrong_channels,
        avg_pool_dilated, avg_pool_of_a_traced_value, pool_ceil_mode_wrong_output, upsample_not_an_integer_scale, interpolate_to_nothing,
    ];
    /// Layers and models: each layer's input shape, the widths of consecutive layers, the layer macros; the
    /// functional norms' channels, groups and weights; attention's heads and widths; rotary widths; recurrent
    /// cells' gate rows.
    layer_rules: [
        conv_layer_wrong_output_size, conv_layer_groups_wrong_channels, flatten_wrong_width, pool_layer_wrong_window_rank,
        batch_norm_wrong_channels, batch_norm2d_of_a_matrix, instance_norm1d_of_an_image,
        group_norm_groups_do_not_divide, group_norm_function_groups_do_not_divide, instance_norm_without_batch_axis,
        layer_norm_weight_not_trailing, attention_heads_do_not_divide, attention_width_mismatch,
        multihead_width_not_heads_times_head_dim, rotary_odd_head_width,
        rotary_head_width_mismatch, lstm_cell_gate_rows, rnn_without_layers, model_layer_widths_disagree,
        layer_without_value,
        derive_parameters_misused,
    ];
    /// Autograd: a scalar loss, traced values, differentiable ops, devices that train.
    autograd_rules: [
        backward_of_non_scalar, backward_of_untraced_tensor, argmax_of_traced_value, autograd_on_embedded,
        custom_op_without_backward, custom_op2_without_backward,
    ];
    /// Devices: the embedded device holds static shapes only.
    device_rules: [embedded_runtime_dim];
}
