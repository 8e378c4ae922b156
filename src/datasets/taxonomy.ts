/**
 * The fixed article taxonomy of the synthetic H&M-shaped data: index groups → indexes → sections, product
 * groups → product types, garment groups and colours. Names and codes imitate the Kaggle H&M tables
 * (including their warts: a product type numbered -1 "Unknown", names with commas and slashes), so that
 * code written against the real data meets the same shapes here. Everything is ASCII: the CSV writer
 * encodes as latin1 for speed.
 */

export interface IndexDef {
  code: string;
  name: string;
  groupNo: number;
  groupName: string;
}

/** H&M's ten indexes and the five index groups they roll up to. */
export const INDEXES: readonly IndexDef[] = [
  { code: 'A', name: 'Ladieswear', groupNo: 1, groupName: 'Ladieswear' },
  { code: 'B', name: 'Lingeries/Tights', groupNo: 1, groupName: 'Ladieswear' },
  { code: 'C', name: 'Ladies Accessories', groupNo: 1, groupName: 'Ladieswear' },
  { code: 'D', name: 'Divided', groupNo: 2, groupName: 'Divided' },
  { code: 'F', name: 'Menswear', groupNo: 3, groupName: 'Menswear' },
  { code: 'G', name: 'Baby Sizes 50-98', groupNo: 4, groupName: 'Baby/Children' },
  { code: 'H', name: 'Children Sizes 92-140', groupNo: 4, groupName: 'Baby/Children' },
  { code: 'I', name: 'Children Sizes 134-170', groupNo: 4, groupName: 'Baby/Children' },
  { code: 'J', name: 'Children Accessories, Swimwear', groupNo: 4, groupName: 'Baby/Children' },
  { code: 'S', name: 'Sport', groupNo: 26, groupName: 'Sport' },
];

/** Which product groups a section sells (indexes into PRODUCT_GROUPS). */
export type SectionKind = 'garment' | 'basics' | 'lingerie' | 'swim' | 'accessories' | 'shoes' | 'sport';

export interface SectionDef {
  no: number;
  name: string;
  /** index into INDEXES */
  index: number;
  kind: SectionKind;
  /** relative size (share of articles and of customers' attention) */
  size: number;
}

export const SECTIONS: readonly SectionDef[] = [
  { no: 16, name: 'Womens Everyday Collection', index: 0, kind: 'garment', size: 3 },
  { no: 15, name: 'Womens Everyday Basics', index: 0, kind: 'basics', size: 2 },
  { no: 18, name: 'Womens Trend', index: 0, kind: 'garment', size: 1.5 },
  { no: 11, name: 'Womens Tailoring', index: 0, kind: 'garment', size: 1.2 },
  { no: 6, name: 'Womens Casual', index: 0, kind: 'garment', size: 1 },
  { no: 5, name: 'Womens Premium', index: 0, kind: 'garment', size: 0.6 },
  { no: 61, name: 'Womens Lingerie', index: 1, kind: 'lingerie', size: 2 },
  { no: 62, name: 'Womens Nightwear, Socks & Tigh', index: 1, kind: 'basics', size: 1.2 },
  { no: 60, name: 'Womens Swimwear, beachwear', index: 1, kind: 'swim', size: 1 },
  { no: 66, name: 'Womens Small accessories', index: 2, kind: 'accessories', size: 1.5 },
  { no: 65, name: 'Womens Big accessories', index: 2, kind: 'accessories', size: 0.8 },
  { no: 64, name: 'Womens Shoes', index: 2, kind: 'shoes', size: 0.8 },
  { no: 53, name: 'Divided Collection', index: 3, kind: 'garment', size: 2 },
  { no: 51, name: 'Divided Basics', index: 3, kind: 'basics', size: 1.2 },
  { no: 50, name: 'Divided Projects', index: 3, kind: 'garment', size: 0.8 },
  { no: 52, name: 'Divided Accessories', index: 3, kind: 'accessories', size: 0.8 },
  { no: 55, name: 'Ladies Denim', index: 3, kind: 'garment', size: 1 },
  { no: 57, name: 'Divided Selected', index: 3, kind: 'garment', size: 0.5 },
  { no: 21, name: 'Contemporary Casual', index: 4, kind: 'garment', size: 1 },
  { no: 22, name: 'Contemporary Smart', index: 4, kind: 'garment', size: 0.8 },
  { no: 23, name: 'Contemporary Street', index: 4, kind: 'garment', size: 0.6 },
  { no: 25, name: 'Men Underwear', index: 4, kind: 'basics', size: 0.8 },
  { no: 26, name: 'Mens Outerwear', index: 4, kind: 'garment', size: 0.4 },
  { no: 27, name: 'Men Suits & Tailoring', index: 4, kind: 'garment', size: 0.4 },
  { no: 28, name: 'Men Accessories', index: 4, kind: 'accessories', size: 0.5 },
  { no: 29, name: 'Men Shoes', index: 4, kind: 'shoes', size: 0.3 },
  { no: 20, name: 'Denim Men', index: 4, kind: 'garment', size: 0.4 },
  { no: 41, name: 'Baby Essentials & Complements', index: 5, kind: 'garment', size: 1.2 },
  { no: 44, name: 'Baby Girl', index: 5, kind: 'garment', size: 0.8 },
  { no: 43, name: 'Baby Boy', index: 5, kind: 'garment', size: 0.7 },
  { no: 46, name: 'Kids Girl', index: 6, kind: 'garment', size: 1.2 },
  { no: 45, name: 'Kids Boy', index: 6, kind: 'garment', size: 1 },
  { no: 47, name: 'Kids Outerwear', index: 6, kind: 'garment', size: 0.5 },
  { no: 72, name: 'Young Girl', index: 7, kind: 'garment', size: 0.9 },
  { no: 77, name: 'Young Boy', index: 7, kind: 'garment', size: 0.7 },
  { no: 79, name: 'Girls Underwear & Basics', index: 7, kind: 'basics', size: 0.6 },
  { no: 76, name: 'Kids Accessories, Swimwear & D', index: 8, kind: 'accessories', size: 0.8 },
  { no: 82, name: 'Kids & Baby Shoes', index: 8, kind: 'shoes', size: 0.4 },
  { no: 2, name: 'Ladies H&M Sport', index: 9, kind: 'sport', size: 0.7 },
  { no: 3, name: 'Men H&M Sport', index: 9, kind: 'sport', size: 0.4 },
  { no: 97, name: 'Kids Sports', index: 9, kind: 'sport', size: 0.3 },
];

export interface ProductGroupDef {
  name: string;
  /** typical list price in SEK; tiers scale it */
  basePrice: number;
  /** [product_type_no, product_type_name, garment_group index] */
  types: readonly (readonly [number, string, number])[];
}

/** H&M garment groups (garment_group_no, garment_group_name). */
export const GARMENT_GROUPS: readonly (readonly [number, string])[] = [
  [1002, 'Jersey Basic'], [1005, 'Jersey Fancy'], [1003, 'Knitwear'], [1009, 'Trousers'], [1010, 'Blouses'],
  [1011, 'Shirts'], [1013, 'Dresses Ladies'], [1007, 'Outdoor'], [1016, 'Trousers Denim'], [1012, 'Skirts'],
  [1017, 'Under-, Nightwear'], [1021, 'Socks and Tights'], [1019, 'Accessories'], [1020, 'Shoes'],
  [1018, 'Swimwear'], [1023, 'Shorts'], [1025, 'Special Offers'], [1001, 'Unknown'],
  [1006, 'Woven/Jersey/Knitted mix Baby'], [1014, 'Dresses/Skirts girls'],
];

/** Indexes into GARMENT_GROUPS, named for readability of the table below. */
const GG = { jerseyBasic: 0, jerseyFancy: 1, knit: 2, trousers: 3, blouses: 4, shirts: 5, dresses: 6, outdoor: 7, denim: 8, skirts: 9, under: 10, socks: 11, acc: 12, shoes: 13, swim: 14, shorts: 15, offers: 16, unknown: 17 } as const;

export const PRODUCT_GROUPS: readonly ProductGroupDef[] = [
  { name: 'Garment Upper body', basePrice: 249, types: [[253, 'Vest top', GG.jerseyBasic], [255, 'T-shirt', GG.jerseyBasic], [254, 'Top', GG.jerseyFancy], [252, 'Sweater', GG.knit], [259, 'Shirt', GG.shirts], [258, 'Blouse', GG.blouses], [245, 'Hoodie', GG.jerseyFancy], [264, 'Cardigan', GG.knit], [260, 'Jacket', GG.outdoor], [262, 'Coat', GG.outdoor], [267, 'Blazer', GG.blouses]] },
  { name: 'Garment Lower body', basePrice: 299, types: [[272, 'Trousers', GG.trousers], [274, 'Shorts', GG.shorts], [275, 'Skirt', GG.skirts], [273, 'Leggings/Tights', GG.jerseyBasic], [271, 'Denim trousers', GG.denim]] },
  { name: 'Garment Full body', basePrice: 349, types: [[265, 'Dress', GG.dresses], [268, 'Jumpsuit/Playsuit', GG.dresses], [270, 'Garment Set', GG.jerseyFancy], [263, 'Dungarees', GG.denim]] },
  { name: 'Underwear', basePrice: 149, types: [[286, 'Underwear bottom', GG.under], [306, 'Bra', GG.under], [283, 'Underwear body', GG.under], [296, 'Underwear set', GG.under]] },
  { name: 'Nightwear', basePrice: 249, types: [[298, 'Pyjama set', GG.under], [297, 'Night gown', GG.under], [295, 'Pyjama bottom', GG.under]] },
  { name: 'Socks & Tights', basePrice: 79, types: [[302, 'Socks', GG.socks], [304, 'Underwear Tights', GG.socks], [303, 'Leg warmers', GG.socks]] },
  { name: 'Swimwear', basePrice: 199, types: [[59, 'Swimwear bottom', GG.swim], [60, 'Swimwear top', GG.swim], [57, 'Swimsuit', GG.swim], [61, 'Sarong', GG.swim]] },
  { name: 'Accessories', basePrice: 99, types: [[66, 'Hat/beanie', GG.acc], [67, 'Scarf', GG.acc], [68, 'Earring', GG.acc], [87, 'Sunglasses', GG.acc], [83, 'Belt', GG.acc], [72, 'Hair clip', GG.acc], [70, 'Necklace', GG.acc], [-1, 'Unknown', GG.unknown]] },
  { name: 'Bags', basePrice: 299, types: [[77, 'Bag', GG.acc], [78, 'Backpack', GG.acc], [79, 'Wallet', GG.acc]] },
  { name: 'Shoes', basePrice: 399, types: [[93, 'Sneakers', GG.shoes], [94, 'Boots', GG.shoes], [95, 'Sandals', GG.shoes], [96, 'Ballerinas', GG.shoes], [98, 'Heeled sandals', GG.shoes]] },
  { name: 'Cosmetic', basePrice: 79, types: [[100, 'Nail polish', GG.acc], [101, 'Lipstick', GG.acc]] },
  { name: 'Unknown', basePrice: 149, types: [[-1, 'Unknown', GG.offers]] },
];

const PG = { upper: 0, lower: 1, full: 2, under: 3, night: 4, socks: 5, swim: 6, acc: 7, bags: 8, shoes: 9, cosmetic: 10, unknown: 11 } as const;

/** Product groups a section of each kind sells, with weights. */
export const KIND_GROUPS: Record<SectionKind, readonly (readonly [number, number])[]> = {
  garment: [[PG.upper, 5], [PG.lower, 3], [PG.full, 2], [PG.unknown, 0.1]],
  basics: [[PG.upper, 3], [PG.under, 2], [PG.socks, 2], [PG.night, 1.5], [PG.lower, 1]],
  lingerie: [[PG.under, 5], [PG.night, 1], [PG.socks, 1]],
  swim: [[PG.swim, 5], [PG.acc, 0.5], [PG.full, 0.5]],
  accessories: [[PG.acc, 5], [PG.bags, 2], [PG.cosmetic, 0.6], [PG.unknown, 0.2]],
  shoes: [[PG.shoes, 1]],
  sport: [[PG.upper, 3], [PG.lower, 3], [PG.under, 1], [PG.shoes, 0.5]],
};

/** H&M colour groups (code, name, relative frequency): black and white dominate, as in the real catalog. */
export const COLOURS: readonly (readonly [number, string, number])[] = [
  [9, 'Black', 22], [10, 'White', 9], [73, 'Dark Blue', 8], [7, 'Grey', 4], [72, 'Blue', 3.5], [13, 'Beige', 3],
  [71, 'Light Blue', 3], [6, 'Light Grey', 2.5], [12, 'Light Beige', 2.5], [52, 'Pink', 2.5], [11, 'Off White', 2.5],
  [8, 'Dark Grey', 2], [51, 'Light Pink', 2.5], [43, 'Dark Red', 1.5], [93, 'Dark Green', 1.5], [42, 'Red', 2],
  [19, 'Greenish Khaki', 1.5], [17, 'Yellowish Brown', 1], [23, 'Dark Yellow', 0.8], [33, 'Orange', 0.6],
  [31, 'Light Orange', 0.5], [82, 'Turquoise', 0.5], [90, 'Green', 0.8], [92, 'Light Green', 0.5], [53, 'Dark Pink', 0.7],
  [62, 'Purple', 0.4], [63, 'Dark Purple', 0.4], [3, 'Gold', 0.5], [5, 'Silver', 0.4], [1, 'Other', 0.2],
  [-1, 'Unknown', 0.05],
];

/** Words for prod_name: H&M names products like "Jade HW Skinny Denim TRS" or "Tilly (1)". */
export const NAME_WORDS: readonly string[] = [
  'Jade', 'Tilly', 'Luna', 'Skye', 'Mika', 'Bella', 'Rex', 'Tom', 'Ellie', 'Nora', 'Ivy', 'Cleo', 'Hanna', 'Maja',
  'Vera', 'Otto', 'Ben', 'Zoe', 'Lola', 'Fiona', 'Greta', 'Ada', 'Iris', 'Kim', 'Sam', 'Nova', 'Milo', 'Ruby',
];
export const NAME_STYLES: readonly string[] = [
  'HW', 'Slim', 'Skinny', 'Relaxed', 'Oversized', 'Basic', 'Soft', 'Linen', 'Rib', 'Denim', 'Jersey', 'Knit',
  'Padded', 'Push', 'Wide', 'Cropped', 'Printed', 'Striped', 'Lace', 'Cotton', '2-pack', '3p', '5p',
];
