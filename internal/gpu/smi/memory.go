package smi

import "github.com/gpuheal/gpuheal/internal/gpu"

// eccTotals reduces one ECC counter block to NVML's two totals, matching
// nvmlDeviceGetTotalEccErrors (corrected = single-bit, uncorrected =
// double-bit, summed over every memory location):
//
//   - old schema: single_bit/total and double_bit/total are those totals;
//   - DTD v11/v12: corrected = sram_correctable + dram_correctable,
//     uncorrected = sram_uncorrectable + dram_uncorrectable;
//   - DTD v13: SRAM uncorrectable is split by detection method into
//     sram_uncorrectable_parity + sram_uncorrectable_secded; both count.
//
// Locations printed as N/A (no DRAM ECC on a GDDR part, say) are left out
// of the sum; if every location is N/A the total is nil, not 0.
func (r recorder) eccTotals(query string, e *smiECC) (corrected, uncorrected *uint64) {
	corrected = r.sum(query+"/correctable",
		r.u64(query+"/single_bit", e.SingleBit.value(), ""),
		r.u64(query+"/sram_correctable", e.SRAMCorrectable, ""),
		r.u64(query+"/dram_correctable", e.DRAMCorrectable, ""),
	)
	uncorrected = r.sum(query+"/uncorrectable",
		r.u64(query+"/double_bit", e.DoubleBit.value(), ""),
		r.u64(query+"/sram_uncorrectable", e.SRAMUncorrectable, ""),
		r.u64(query+"/sram_uncorrectable_parity", e.SRAMUncorrectableParity, ""),
		r.u64(query+"/sram_uncorrectable_secded", e.SRAMUncorrectableSECDED, ""),
		r.u64(query+"/dram_uncorrectable", e.DRAMUncorrectable, ""),
	)
	return corrected, uncorrected
}

// retired reads pre-Ampere page retirement. Ampere and later print every
// field N/A (they remap rows instead), which yields nil.
func (r recorder) retired(x *smiRetired) *gpu.RetiredPages {
	r.blockText("retired_pages", x.Text)
	sbe := r.u64("retired_pages/multiple_single_bit_retirement/retired_count", x.SingleBit, "")
	dbe := r.u64("retired_pages/double_bit_retirement/retired_count", x.DoubleBit, "")
	if sbe == nil && dbe == nil {
		return nil
	}
	rp := &gpu.RetiredPages{}
	if sbe != nil {
		rp.SingleBit = *sbe
	}
	if dbe != nil {
		rp.DoubleBit = *dbe
	}
	// pending_blacklist is the older name of pending_retirement; some
	// drivers print both.
	rp.Pending = isTrue(r.flag("retired_pages/pending_retirement", x.PendingRetirement)) ||
		isTrue(r.flag("retired_pages/pending_blacklist", x.PendingBlacklist))
	return rp
}

// remapped reads Ampere-and-later row remapping; nil where nvidia-smi
// prints the whole block as N/A (pre-Ampere, GeForce, MIG on some drivers).
func (r recorder) remapped(x *smiRemapped) *gpu.RemappedRows {
	r.blockText("remapped_rows", x.Text)
	corr := r.u64("remapped_rows/remapped_row_corr", x.Correctable, "")
	unc := r.u64("remapped_rows/remapped_row_unc", x.Uncorrect, "")
	if corr == nil && unc == nil {
		return nil
	}
	rr := &gpu.RemappedRows{
		Pending: isTrue(r.flag("remapped_rows/remapped_row_pending", x.Pending)),
		Failure: isTrue(r.flag("remapped_rows/remapped_row_failure", x.Failure)),
	}
	if corr != nil {
		rr.Correctable = *corr
	}
	if unc != nil {
		rr.Uncorrectable = *unc
	}
	return rr
}

func isTrue(b *bool) bool { return b != nil && *b }
