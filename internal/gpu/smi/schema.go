package smi

import (
	"encoding/xml"
	"strings"
)

// The structs below mirror the parts of nvidia-smi -q -x that gpuheal
// uses. Every leaf is a string because any leaf may hold "N/A" or an NVML
// error string instead of a number; values.go turns them into types.
// Elements that differ between DTD versions are all listed, and the
// conversion picks whichever the driver printed.

type smiLog struct {
	XMLName       xml.Name `xml:"nvidia_smi_log"`
	DriverVersion string   `xml:"driver_version"`
	CUDAVersion   string   `xml:"cuda_version"`
	AttachedGPUs  string   `xml:"attached_gpus"`
	GPUs          []smiGPU `xml:"gpu"`
}

type smiGPU struct {
	ID              string   `xml:"id,attr"`
	ProductName     string   `xml:"product_name"`
	PersistenceMode string   `xml:"persistence_mode"`
	CurrentMIG      string   `xml:"mig_mode>current_mig"`
	MIGDevices      []smiMIG `xml:"mig_devices>mig_device"`
	Serial          string   `xml:"serial"`
	UUID            string   `xml:"uuid"`
	MinorNumber     string   `xml:"minor_number"`
	VBIOSVersion    string   `xml:"vbios_version"`

	// gpu_reset_status and gpu_recovery_action: DTD v12 and later.
	ResetRequired            string `xml:"gpu_reset_status>reset_required"`
	DrainAndResetRecommended string `xml:"gpu_reset_status>drain_and_reset_recommended"`
	RecoveryAction           string `xml:"gpu_recovery_action"`

	PCI smiPCI `xml:"pci"`

	// Renamed from throttle to event reasons in DTD v12.
	ThrottleReasons *reasonBlock `xml:"clocks_throttle_reasons"`
	EventReasons    *reasonBlock `xml:"clocks_event_reasons"`

	FBMemory   smiMemory `xml:"fb_memory_usage"`
	GPUUtil    string    `xml:"utilization>gpu_util"`
	MemoryUtil string    `xml:"utilization>memory_util"`
	CurrentECC string    `xml:"ecc_mode>current_ecc"`
	ECCErrors  struct {
		Text      string `xml:",chardata"`
		Volatile  smiECC `xml:"volatile"`
		Aggregate smiECC `xml:"aggregate"`
	} `xml:"ecc_errors"`

	RetiredPages smiRetired  `xml:"retired_pages"`
	RemappedRows smiRemapped `xml:"remapped_rows"`

	GPUTemp    string `xml:"temperature>gpu_temp"`
	MemoryTemp string `xml:"temperature>memory_temp"`

	// power_readings up to DTD v11, gpu_power_readings from v12.
	PowerReadings    smiPower `xml:"power_readings"`
	GPUPowerReadings smiPower `xml:"gpu_power_readings"`

	SMClock  string `xml:"clocks>sm_clock"`
	MemClock string `xml:"clocks>mem_clock"`

	FabricState  string `xml:"fabric>state"`
	FabricStatus string `xml:"fabric>status"`
}

type smiMIG struct {
	Index             string    `xml:"index"`
	GPUInstanceID     string    `xml:"gpu_instance_id"`
	ComputeInstanceID string    `xml:"compute_instance_id"`
	ECC               smiECC    `xml:"ecc_error_count>volatile_count"`
	FBMemory          smiMemory `xml:"fb_memory_usage"`
}

type smiPCI struct {
	BusID          string `xml:"pci_bus_id"`
	MaxLinkGen     string `xml:"pci_gpu_link_info>pcie_gen>max_link_gen"`
	CurrentLinkGen string `xml:"pci_gpu_link_info>pcie_gen>current_link_gen"`
	MaxLinkWidth   string `xml:"pci_gpu_link_info>link_widths>max_link_width"`
	CurLinkWidth   string `xml:"pci_gpu_link_info>link_widths>current_link_width"`
	ReplayCounter  string `xml:"replay_counter"`
}

type smiMemory struct {
	Total string `xml:"total"`
	Used  string `xml:"used"`
}

// smiECC covers three generations of one block:
//   - older drivers: single_bit/double_bit, each with a <total> (the GPU
//     block) or a bare number (the MIG block);
//   - DTD v11/v12: sram_/dram_ correctable/uncorrectable;
//   - DTD v13: sram_uncorrectable split into _parity and _secded.
type smiECC struct {
	SingleBit               *bitCount `xml:"single_bit"`
	DoubleBit               *bitCount `xml:"double_bit"`
	SRAMCorrectable         string    `xml:"sram_correctable"`
	SRAMUncorrectable       string    `xml:"sram_uncorrectable"`
	SRAMUncorrectableParity string    `xml:"sram_uncorrectable_parity"`
	SRAMUncorrectableSECDED string    `xml:"sram_uncorrectable_secded"`
	DRAMCorrectable         string    `xml:"dram_correctable"`
	DRAMUncorrectable       string    `xml:"dram_uncorrectable"`
}

type bitCount struct {
	Text  string `xml:",chardata"`
	Total string `xml:"total"`
}

func (b *bitCount) value() string {
	if b == nil {
		return ""
	}
	if strings.TrimSpace(b.Total) != "" {
		return b.Total
	}
	return b.Text
}

type smiRetired struct {
	Text              string `xml:",chardata"`
	SingleBit         string `xml:"multiple_single_bit_retirement>retired_count"`
	DoubleBit         string `xml:"double_bit_retirement>retired_count"`
	PendingBlacklist  string `xml:"pending_blacklist"`
	PendingRetirement string `xml:"pending_retirement"`
}

type smiRemapped struct {
	Text        string `xml:",chardata"`
	Correctable string `xml:"remapped_row_corr"`
	Uncorrect   string `xml:"remapped_row_unc"`
	Pending     string `xml:"remapped_row_pending"`
	Failure     string `xml:"remapped_row_failure"`
}

type smiPower struct {
	PowerDraw          string `xml:"power_draw"`
	AveragePowerDraw   string `xml:"average_power_draw"`
	InstantPowerDraw   string `xml:"instant_power_draw"`
	EnforcedPowerLimit string `xml:"enforced_power_limit"`
	CurrentPowerLimit  string `xml:"current_power_limit"`
	PowerLimit         string `xml:"power_limit"`
}

// reasonBlock keeps the children of a clocks_*_reasons element by name:
// the element names carry a schema-specific prefix, and new reasons appear
// with new drivers, so a fixed struct would need one field per pair.
type reasonBlock struct {
	text  []byte
	items []reasonItem
}

type reasonItem struct{ name, value string }

func (b *reasonBlock) UnmarshalXML(d *xml.Decoder, _ xml.StartElement) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.CharData:
			b.text = append(b.text, t...)
		case xml.StartElement:
			var v string
			if err := d.DecodeElement(&v, &t); err != nil {
				return err
			}
			b.items = append(b.items, reasonItem{t.Name.Local, v})
		case xml.EndElement:
			return nil
		}
	}
}
